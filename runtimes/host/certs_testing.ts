/**
 * Test support: a throwaway CA and a `127.0.0.1` server certificate made by the real openssl.
 *
 * @module
 */

/** A CA and a 127.0.0.1 server certificate made by the real openssl, or null when openssl is absent. */
export async function makeCerts(): Promise<{ ca: string; cert: string; key: string } | null> {
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
      "subjectAltName=IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n",
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
