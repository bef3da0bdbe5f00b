/**
 * Test support: a throwaway CA and a `127.0.0.1` server certificate made by the real openssl.
 *
 * @module
 */

/**
 * A CA and a 127.0.0.1 server certificate made by the real openssl, or null when openssl is absent. `ips` are more
 * addresses the certificate names (a VM's view of a loopback server through QEMU's `guestfwd`, say).
 */
export async function makeCerts(
  o: { ips?: readonly string[] } = {},
): Promise<{ ca: string; cert: string; key: string } | null> {
  for (const ip of o.ips ?? []) {
    if (!/^[0-9.]+$|^[0-9a-f:]+$/i.test(ip)) throw new TypeError(`makeCerts: ${ip} is not an IP address`);
  }
  const dir = await Deno.makeTempDir();
  const run = async (args: string[]) => {
    const out = await new Deno.Command("openssl", { args, cwd: dir, stdout: "null", stderr: "piped" }).output();
    if (!out.success) throw new Error(`openssl ${args[0]}: ${new TextDecoder().decode(out.stderr)}`);
  };
  try {
    const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    await run(["req", "-x509", ...ec, "-keyout", "ca.key", "-out", "ca.pem", "-subj", "/CN=bcd-test-ca", "-days", "2"]);
    await run(["req", ...ec, "-keyout", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=127.0.0.1"]);
    await Deno.writeTextFile(
      `${dir}/ext.cnf`,
      `subjectAltName=${
        ["127.0.0.1", ...(o.ips ?? [])].map((ip) => `IP:${ip}`).join(",")
      }\nbasicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n`,
    );
    await run([
      "x509",
      "-req",
      "-in",
      "leaf.csr",
      "-CA",
      "ca.pem",
      "-CAkey",
      "ca.key",
      "-CAcreateserial",
      "-out",
      "leaf.pem",
      "-days",
      "2",
      "-extfile",
      "ext.cnf",
    ]);
    return {
      ca: await Deno.readTextFile(`${dir}/ca.pem`),
      cert: await Deno.readTextFile(`${dir}/leaf.pem`),
      key: await Deno.readTextFile(`${dir}/leaf.key`),
    };
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
