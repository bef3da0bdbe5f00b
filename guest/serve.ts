/**
 * `guest::serve`: the guest agent of a VM without a layered root (seed 002 §Guest agent). It answers Ping with
 * Pong, sends each Echo back, answers each Probe with ProbeFailed (there is no layered root to probe), installs
 * agent config bundles (seed 004), and answers Stop with Stopped, then returns. A malformed message, a message
 * about a layered root (RootConfig, Maps, Start) or about an execution, and a message only the guest sends end
 * serving with a failure.
 *
 * @module
 */
import { AttachGate } from "./attach_gate.ts";
import type { Logger } from "../core/log/mod.ts";
import {
  Decoder,
  encodeFrame,
  encodeInstallResult,
  encodeProblem,
  type Frame,
  frameParts,
  FramingError,
  isExecKind,
  Kind,
} from "../core/framing/mod.ts";
import { RESET, type Transport } from "./transport.ts";
import type { ServeEnd } from "./diagnostics.ts";
import type { ConfigInstaller } from "./config_install.ts";

/** ProbeFailed's problem in a VM without a layered root. */
export const NO_LAYERED_ROOT = "no layered root: this guest agent serves a VM without one";

/** Options of {@link serve}. */
export interface ServeOptions {
  readonly log: Logger;
  /** Installs agent config bundles; without one, an install is answered `unimplemented`. */
  readonly installer?: ConfigInstaller;
  /**
   * The VM's secret (the launch capability, which is also its channel key): each epoch attaches by proving it first
   * (`attach_gate.ts`); unset or null takes any host.
   */
  readonly channelKey?: Uint8Array | null;
}

const LAYERED = new Set<number>([Kind.RootConfig, Kind.Maps, Kind.Start]);

/** Serves `t` until Stop, the end of the stream, or a failure. */
export async function serve(t: Transport, opts: ServeOptions): Promise<ServeEnd> {
  const dec = new Decoder({ from: "host" });
  const install = opts.installer?.session(() => true);
  const gate = new AttachGate(opts.channelKey ?? null, opts.log);
  const handle = async (f: Frame): Promise<"stop" | null> => {
    switch (f.kind) {
      case Kind.Ping:
        await t.write(encodeFrame(Kind.Pong));
        return null;
      case Kind.Echo:
        // The body is a view into the decoder's buffer, valid until the next message is taken: written before that.
        for (const part of frameParts(Kind.Echo, f.body)) await t.write(part);
        return null;
      case Kind.Probe:
        await t.write(encodeFrame(Kind.ProbeFailed, encodeProblem(NO_LAYERED_ROOT)));
        return null;
      case Kind.Stop:
        await t.write(encodeFrame(Kind.Stopped));
        return "stop";
      case Kind.AgentConfigVersion:
      case Kind.AgentConfigChunk:
      case Kind.AgentConfigEnd: {
        if (install === undefined) {
          if (f.kind === Kind.AgentConfigEnd) {
            const r = { code: "unimplemented" as const, problem: "this guest agent installs no agent config" };
            await t.write(encodeFrame(Kind.AgentConfigResult, encodeInstallResult(r)));
          }
          return null;
        }
        const reply = install.frame(f.kind, f.body);
        if (reply) await t.write(install.encode(await reply));
        return null;
      }
    }
    if (LAYERED.has(f.kind)) throw new Refusal(`kind ${f.kind} is about a layered root, which this VM has not`);
    if (isExecKind(f.kind)) {
      throw new Refusal(`kind ${f.kind} is about an execution, which this guest agent does not run`);
    }
    throw new Refusal(`kind ${f.kind} is not served here`);
  };
  try {
    for (;;) {
      const chunk = await t.read();
      if (chunk === RESET) {
        const dropped = dec.reset();
        gate.reset();
        install?.reset();
        opts.log.info({ dropped }, "session reset: a new epoch starts with a new message");
        continue;
      }
      if (chunk === null) {
        dec.finish();
        return { ok: true, reason: "closed" };
      }
      dec.feed(chunk);
      for (let f = dec.next(); f !== null; f = dec.next()) {
        const g = gate.take(f);
        if (g === "dropped") continue;
        if (g !== null) await t.write(g);
        else if ((await handle(f)) === "stop") return { ok: true, reason: "stopped" };
      }
    }
  } catch (e) {
    if (e instanceof FramingError || e instanceof Refusal) return { ok: false, problem: e.message };
    return { ok: false, problem: `the session failed: ${e instanceof Error ? e.message : String(e)}` };
  }
}

class Refusal extends Error {
  override name = "Refusal";
}
