/**
 * The ramdisk init's kernel command-line parsing (`cmdline.sh`), run by the static busybox's sh the ramdisk runs it
 * with, row by row: what is set, what is refused and why.
 */
import assert from "node:assert/strict";

const BUSYBOX = "/bin/busybox";
const SCRIPT = new URL("./cmdline.sh", import.meta.url).pathname;
const missing = await Deno.stat(BUSYBOX).then(() => undefined, (e) => {
  if (e instanceof Deno.errors.NotFound) return `${BUSYBOX} is missing (apt busybox-static)`;
  throw e;
});
if (missing) console.error(`skipped the cmdline.sh tests: ${missing}`);

interface Parsed {
  rc: number;
  token: string;
  joinUrl: string;
  gateway: string;
  level: string;
  lines: string[];
}

async function parse(cmdline: string): Promise<Parsed> {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/cmdline`, cmdline + "\n");
    const script = `. ${SCRIPT}; bcd_parse_cmdline ${dir}/cmdline; rc=$?
echo "rc=$rc"; echo "token=$BCD_JOIN_TOKEN"; echo "join=$BCD_JOIN_URL"; echo "gateway=$BCD_GATEWAY"; echo "level=$BCD_LOG_LEVEL"`;
    const out = await new Deno.Command(BUSYBOX, { args: ["sh", "-c", script], cwd: dir, stdout: "piped" }).output();
    const lines = new TextDecoder().decode(out.stdout).trimEnd().split("\n");
    const v = (k: string) => lines.find((l) => l.startsWith(`${k}=`))!.slice(k.length + 1);
    return {
      rc: Number(v("rc")),
      token: v("token"),
      joinUrl: v("join"),
      gateway: v("gateway"),
      level: v("level"),
      lines: lines.filter((l) => l.startsWith("bcd-ramdisk: ")),
    };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const JOIN = "bcd.join_url=https://10.0.2.100/v1/join";

Deno.test({
  name: "cmdline.sh sets the join token, join URL, gateway and log level from the kernel command line",
  ignore: missing !== undefined,
  async fn() {
    const p = await parse(
      `BOOT_IMAGE=/bcd/vmlinuz console=ttyS0 bcd.join_token=join-0f1e.A_b~c+d/e= ${JOIN} ` +
        "bcd.gateway=wss://10.0.2.100:8443/v1/session bcd.log_level=debug quiet",
    );
    assert.deepEqual(p, {
      rc: 0,
      token: "join-0f1e.A_b~c+d/e=",
      joinUrl: "https://10.0.2.100/v1/join",
      gateway: "wss://10.0.2.100:8443/v1/session",
      level: "debug",
      lines: [],
    });
  },
});

Deno.test({
  name: "cmdline.sh refuses each bad parameter with a line naming it, and fails without a token or a join URL",
  ignore: missing !== undefined,
  async fn(t) {
    const rows: { what: string; cmdline: string; rc: number; line: RegExp; token?: string; joinUrl?: string }[] = [
      { what: "no token", cmdline: JOIN, rc: 1, line: /no bcd\.join_token: the ramdisk cannot join/ },
      {
        what: "no join URL",
        cmdline: "bcd.join_token=t1",
        rc: 1,
        line: /no bcd\.join_url: the ramdisk cannot join/,
        token: "t1",
      },
      {
        what: "a token with a shell character",
        cmdline: `bcd.join_token=a;reboot ${JOIN}`,
        rc: 1,
        line: /bcd\.join_token holds a character outside/,
      },
      { what: "an empty token", cmdline: `bcd.join_token= ${JOIN}`, rc: 1, line: /bcd\.join_token holds a character/ },
      {
        what: "a token past 512 characters",
        cmdline: `bcd.join_token=${"a".repeat(513)} ${JOIN}`,
        rc: 1,
        line: /bcd\.join_token is 513 characters \(at most 512\)/,
      },
      {
        what: "a join URL over plain http",
        cmdline: "bcd.join_token=t1 bcd.join_url=http://10.0.2.100/v1/join",
        rc: 1,
        line: /bcd\.join_url must start with https:\/\//,
      },
      {
        what: "a join URL without a host",
        cmdline: "bcd.join_token=t1 bcd.join_url=https:///v1/join",
        rc: 1,
        line: /bcd\.join_url names no host/,
      },
      {
        what: "a join URL with a character no URL holds",
        cmdline: 'bcd.join_token=t1 bcd.join_url=https://a/"b',
        rc: 1,
        line: /bcd\.join_url holds a character a URL cannot/,
      },
      {
        what: "a gateway that is not wss",
        cmdline: `bcd.join_token=t1 ${JOIN} bcd.gateway=ws://10.0.2.100/v1/session`,
        rc: 1,
        line: /bcd\.gateway must start with wss:\/\//,
        token: "t1",
        joinUrl: "https://10.0.2.100/v1/join",
      },
      {
        what: "an unknown log level",
        cmdline: `bcd.join_token=t1 ${JOIN} bcd.log_level=loud`,
        rc: 1,
        line: /bcd\.log_level must be trace, debug, info, warn, error or fatal/,
        token: "t1",
        joinUrl: "https://10.0.2.100/v1/join",
      },
      {
        what: "an unknown bcd parameter is named and ignored",
        cmdline: `bcd.join_token=t1 ${JOIN} bcd.colour=blue`,
        rc: 0,
        line: /unknown parameter bcd\.colour ignored/,
        token: "t1",
        joinUrl: "https://10.0.2.100/v1/join",
      },
    ];
    for (const r of rows) {
      await t.step(r.what, async () => {
        const p = await parse(r.cmdline);
        assert.equal(p.rc, r.rc, p.lines.join("\n"));
        assert.ok(p.lines.some((l) => r.line.test(l)), p.lines.join("\n"));
        assert.equal(
          p.token,
          r.token ?? (/bcd\.join_token=t1\b/.test(r.cmdline) ? "t1" : ""),
          "a refused token is unset",
        );
        assert.equal(p.joinUrl, r.joinUrl ?? (r.cmdline.includes(JOIN) ? "https://10.0.2.100/v1/join" : ""));
      });
    }
  },
});

Deno.test({
  name: "cmdline.sh never evaluates a value or expands a glob, and the last of a repeated parameter counts",
  ignore: missing !== undefined,
  async fn() {
    const p = await parse("* bcd.join_token=first bcd.join_token=second bcd.join_url=https://h/$(reboot)`x`?a=*");
    assert.equal(p.rc, 1, p.lines.join("\n"));
    assert.ok(p.lines.some((l) => /bcd\.join_url holds a character a URL cannot/.test(l)), "the backquote");
    const q = await parse("* bcd.join_token=first bcd.join_token=second bcd.join_url=https://h/$(reboot)?a=*");
    assert.equal(q.rc, 0, q.lines.join("\n"));
    assert.equal(q.token, "second");
    assert.equal(q.joinUrl, "https://h/$(reboot)?a=*", "kept as written, never run or globbed");
  },
});
