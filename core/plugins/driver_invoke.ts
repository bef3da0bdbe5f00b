/**
 * The `driver.invoke` kind (000 §Kinds by lane: provision lane, node, site and ramdisk, destructive; "runs in a bcx
 * plugin bcd hosts"): `{driver, operation, input_json}` routed to the plugin {@link PluginHost} starts, the command's
 * cancel forwarded as the protocol's `cancel`, and the plugin's output (at most `MAX_OUTPUT` bytes) answered as
 * `DriverInvokeResult.output_json`. Every failure is the command's, with the plugin's reason (`unknown-plugin`,
 * `unknown-operation`, `plugin-protocol`, `plugin-timeout`, `plugin-crashed`, `plugin-failed`, `cancelled`); the
 * agent goes on.
 *
 * @module
 */
import { packResult, unpackPayload, WireDecodeError } from "../../proto/mod.ts";
import type { CommandBody } from "../commands/command.ts";
import type { HandlerContext, HandlerResult, KindHandler } from "../commands/handlers.ts";
import { CommandFailed, InvalidPayload } from "../commands/rejection.ts";
import type { PluginHost } from "./host.ts";
import { isOperationName, isPluginName, MAX_INPUT, PluginError } from "./protocol.ts";

/** A decoded, checked `driver.invoke` payload. */
export interface DriverInvoke {
  readonly driver: string;
  readonly operation: string;
  readonly input: string;
}

/** Decodes and checks the payload; throws `InvalidPayload`. */
export function driverInvokePayload(p: CommandBody["payload"]): DriverInvoke {
  if (p === undefined) throw new InvalidPayload("driver.invoke needs a payload");
  let m;
  try {
    m = unpackPayload("driver.invoke", { type_url: p.typeUrl, value: p.value });
  } catch (e) {
    if (e instanceof WireDecodeError) throw new InvalidPayload(e.message, { cause: e });
    throw e;
  }
  const driver = m.driver ?? "";
  const operation = m.operation ?? "";
  const input = m.input_json ?? "";
  if (!isPluginName(driver)) throw new InvalidPayload(`driver ${JSON.stringify(driver)} is not a plugin name`);
  if (!isOperationName(operation)) {
    throw new InvalidPayload(`operation ${JSON.stringify(operation)} is not an operation name`);
  }
  if (input.length > MAX_INPUT) throw new InvalidPayload(`input_json is over ${MAX_INPUT} bytes`);
  return { driver, operation, input };
}

/** The `driver.invoke` handler over `host` (its `invoke`: the agents pass one that loads the host on first use). */
export function driverInvokeHandler(host: Pick<PluginHost, "invoke">): KindHandler {
  return {
    kind: "driver.invoke",
    resources(command) {
      const p = driverInvokePayload(command.payload);
      return [`plugin:${p.driver}`];
    },
    async run(ctx: HandlerContext): Promise<HandlerResult> {
      const p = driverInvokePayload(ctx.command.payload);
      let output: string;
      try {
        output = await host.invoke(p.driver, p.operation, p.input, ctx.signal);
      } catch (e) {
        if (e instanceof PluginError) throw new CommandFailed(e.reason, e.message, { cause: e });
        throw e;
      }
      const any = packResult("driver.invoke", { output_json: output });
      return { result: { typeUrl: any.type_url, value: any.value } };
    },
  };
}
