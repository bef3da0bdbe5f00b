/**
 * Test support for the image cache: an https origin on loopback with a throwaway CA (real openssl), whose answers a
 * test can hold until it releases them.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { makeCerts } from "../host/certs_testing.ts";

/** The SHA-256 of `b` in hex. */
export function sha256Hex(b: Uint8Array | string): string {
  return createHash("sha256").update(b).digest("hex");
}

/** A loopback https origin serving `files` by path; `hold()` makes the next answers wait until `release()`. */
export interface Origin {
  readonly ca: string;
  readonly base: string;
  /** Requests seen, by path. */
  readonly seen: string[];
  hold(): void;
  release(): void;
  shutdown(): Promise<void>;
}

/** A throwaway CA and a 127.0.0.1 certificate (real openssl), or null when openssl is absent. */
export const originCerts = makeCerts;

/** Starts an {@link Origin} with certificates from {@link originCerts}. */
export function startOrigin(
  files: Record<string, Uint8Array<ArrayBuffer>>,
  certs: { ca: string; cert: string; key: string },
): Origin {
  let gate: PromiseWithResolvers<void> | undefined;
  const seen: string[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, cert: certs.cert, key: certs.key, onListen() {} },
    async (req) => {
      const path = new URL(req.url).pathname;
      seen.push(path);
      if (gate) await gate.promise;
      const body = files[path];
      return body ? new Response(body) : new Response("no\n", { status: 404 });
    },
  );
  return {
    ca: certs.ca,
    base: `https://127.0.0.1:${server.addr.port}`,
    seen,
    hold() {
      gate = Promise.withResolvers();
    },
    release() {
      gate?.resolve();
      gate = undefined;
    },
    async shutdown() {
      gate?.resolve();
      await server.shutdown();
    },
  };
}
