/**
 * `site.httpProxy` (control lane, destructive, 1 min): one HTTP request from the site agent to an agentless machine of
 * the site, for the control plane, answered with the status, headers and (bounded) body. Every guard of
 * `proxy_guard.ts` runs first, in the seed's order, and a refusal is `forbidden-target`; the request then goes to the
 * checked address (`proxy_http.ts`). `max_response_bytes` is 1 MiB by default and at most 16 MiB (`truncated` says
 * the body was cut); `timeout_ms` 30 s by default and at most 50 s, inside the kind's minute. Methods: `GET`, `HEAD`,
 * `POST`, `PUT`, `PATCH`, `DELETE`; URLs: `http:` or `https:` without credentials in them. The batch leaf of a
 * non-`GET` is bound to its payload ({@link proxySubject}): the quorum's approvers sign exactly this request.
 *
 * @module
 */
import { type Clock, realClock } from "../../core/clock.ts";
import type { HandlerContext, HandlerResult, KindHandler } from "../../core/commands/handlers.ts";
import { InvalidPayload } from "../../core/commands/rejection.ts";
import { payloadOf, resultOf } from "../../core/commands/kind_payload.ts";
import { checkProxyTarget, type ProxyGuardPorts, proxySubject } from "./proxy_guard.ts";
import { checkHeaders, proxyHttp } from "./proxy_http.ts";

export const DEFAULT_PROXY_BYTES = 1024 * 1024;
export const MAX_PROXY_BYTES = 16 * 1024 * 1024;
export const DEFAULT_PROXY_TIMEOUT_MS = 30_000;
export const MAX_PROXY_TIMEOUT_MS = 50_000;
const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"];

/** What the handler needs beyond the guards. */
export interface HttpProxyPorts extends ProxyGuardPorts {
  readonly clock?: Pick<Clock, "setTimer">;
  /** Extra CAs for `https:` targets (tests). */
  readonly caCerts?: readonly string[];
}

/** The `site.httpProxy` handler. */
export function siteHttpProxyHandler(ports: HttpProxyPorts): KindHandler {
  return {
    kind: "site.httpProxy",
    resources(command) {
      _checked(payloadOf("site.httpProxy", command));
      return [];
    },
    batchSubject(command) {
      return proxySubject(
        payloadOf("site.httpProxy", command).target_node_id,
        command.payload?.value ?? new Uint8Array(),
      );
    },
    async run(ctx: HandlerContext): Promise<HandlerResult> {
      const p = payloadOf("site.httpProxy", ctx.command);
      const { url, method } = _checked(p);
      const target = await checkProxyTarget({
        targetNodeId: p.target_node_id,
        method,
        url,
        batchId: ctx.command.batchId,
      }, ports);
      ctx.logger.info(
        {
          target_node: p.target_node_id,
          method,
          url: url.href,
          address: target.address,
          batch_id: ctx.command.batchId,
        },
        "site proxy request",
      );
      const res = await proxyHttp({
        method,
        url,
        address: target.address,
        port: target.port,
        headers: p.headers.map((h) => ({ name: h.name, value: h.value })),
        body: p.body,
        maxBytes: p.max_response_bytes || DEFAULT_PROXY_BYTES,
        timeoutMs: p.timeout_ms || DEFAULT_PROXY_TIMEOUT_MS,
        clock: ports.clock ?? realClock,
        ...(ports.caCerts ? { caCerts: ports.caCerts } : {}),
        signal: ctx.signal,
      });
      return {
        result: resultOf("site.httpProxy", {
          status: res.status,
          headers: res.headers,
          body: res.body,
          truncated: res.truncated,
        }),
      };
    },
  };
}

function _checked(p: ReturnType<typeof payloadOf<"site.httpProxy">>): { url: URL; method: string } {
  if (p.target_node_id === "") throw new InvalidPayload("target_node_id is empty");
  const method = p.method.toUpperCase();
  if (!METHODS.includes(method)) {
    throw new InvalidPayload(`method ${JSON.stringify(p.method)} is not one of ${METHODS}`);
  }
  let url: URL;
  try {
    url = new URL(p.url);
  } catch (e) {
    throw new InvalidPayload(`url ${JSON.stringify(p.url.slice(0, 200))} is not a URL`, { cause: e });
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new InvalidPayload(`url scheme ${url.protocol}`);
  if (url.username || url.password) throw new InvalidPayload("url carries credentials");
  if (p.max_response_bytes > MAX_PROXY_BYTES) {
    throw new InvalidPayload(`max_response_bytes ${p.max_response_bytes} is over ${MAX_PROXY_BYTES}`);
  }
  if (p.timeout_ms > MAX_PROXY_TIMEOUT_MS) {
    throw new InvalidPayload(`timeout_ms ${p.timeout_ms} is over ${MAX_PROXY_TIMEOUT_MS}`);
  }
  if (method === "GET" || method === "HEAD") {
    if (p.body.length > 0) throw new InvalidPayload(`a ${method} carries no body`);
  }
  checkHeaders(p.headers.map((h) => ({ name: h.name, value: h.value })));
  return { url, method };
}
