/**
 * Test-only: a loopback https origin signed by a test CA, serving an image at `/image.raw`, redirects to it over https
 * (`/to-https`) and http (`/to-http`), a stream that breaks after 5 MiB (`/broken`), and any other paths given.
 *
 * @module
 */
import { makeCerts } from "../host/certs_testing.ts";

const MIB = 1024 * 1024;

/** Runs `f` with the origin's base URL and a fetch that trusts its CA. */
export async function withServer(
  image: Uint8Array,
  f: (base: string, fetcher: typeof fetch) => Promise<void>,
  more: Record<string, Uint8Array> = {},
): Promise<void> {
  const certs = await makeCerts();
  if (certs === null) throw new Error("openssl is missing: the https test server cannot be made");
  const ac = new AbortController();
  const server: Deno.HttpServer<Deno.NetAddr> = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    cert: certs.cert,
    key: certs.key,
    signal: ac.signal,
    onListen: () => {},
  }, (req): Response => {
    const path = new URL(req.url).pathname;
    const base: string = `https://127.0.0.1:${server.addr.port}`;
    if (path === "/image.raw") return new Response(image.slice());
    const other = more[path];
    if (other) return new Response(other.slice());
    if (path === "/to-https") return new Response(null, { status: 302, headers: { location: `${base}/image.raw` } });
    if (path === "/to-http") {
      return new Response(null, {
        status: 302,
        headers: { location: `http://127.0.0.1:${server.addr.port}/image.raw` },
      });
    }
    if (path === "/broken") {
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(c) {
          if (sent === 5 * MIB) return c.error(new Error("connection reset"));
          c.enqueue(image.slice(sent, sent + MIB));
          sent += MIB;
        },
      });
      return new Response(body);
    }
    return new Response("no", { status: 404 });
  });
  const client = Deno.createHttpClient({ caCerts: [certs.ca] });
  try {
    await f(`https://127.0.0.1:${server.addr.port}`, (input, init) => fetch(input, { ...init, client }));
  } finally {
    client.close();
    ac.abort();
    await server.finished;
  }
}
