import assert from "node:assert/strict";
import { SAMPLE_PLAN } from "./args_samples_testing.ts";
import { checkArgs } from "./args.ts";
import { HelperError } from "./errors.ts";

/** Every refusal of the libvirt ops: op, arguments, code, and what the message names. Nothing runs for any. */
const REFUSED: { why: string; op: Parameters<typeof checkArgs>[0]; args: unknown; code: string; names: RegExp }[] = [
  {
    why: "a path instead of an id",
    op: "libvirt.start",
    args: { id: "/etc/passwd", paused: false },
    code: "invalid-argument",
    names: /id "\/etc\/passwd"/,
  },
  {
    why: "a domain named like a traversal",
    op: "libvirt.undefine",
    args: { id: ".." },
    code: "invalid-argument",
    names: /id/,
  },
  {
    why: "a field the op does not take (a path)",
    op: "libvirt.destroy",
    args: { id: "i-1", path: "/x" },
    code: "unknown-field",
    names: /args\.path/,
  },
  {
    why: "paused that is not a boolean",
    op: "libvirt.start",
    args: { id: "i-1", paused: "yes" },
    code: "invalid-argument",
    names: /paused/,
  },
  {
    why: "a size that is not a byte count",
    op: "libvirt.blockresize",
    args: { id: "i-1", bytes: -1 },
    code: "invalid-argument",
    names: /bytes/,
  },
  {
    why: "a volume attached by path",
    op: "libvirt.attach_disk",
    args: { id: "i-1", disk: { volume: { id: "../../etc/shadow", serial: "s", readOnly: false } } },
    code: "invalid-argument",
    names: /disk\.volume\.id "\.\.\/\.\.\/etc\/shadow" is not a volume id/,
  },
  {
    why: "a disk with a source file of its own",
    op: "libvirt.attach_disk",
    args: { id: "i-1", disk: { volume: { id: "v", serial: "s", readOnly: false, file: "/dev/sda" } } },
    code: "unknown-field",
    names: /disk\.volume\.file/,
  },
  {
    why: "a serial outside [a-z0-9-]",
    op: "libvirt.attach_disk",
    args: { id: "i-1", disk: { volume: { id: "v", serial: "Bad Serial", readOnly: false } } },
    code: "invalid-argument",
    names: /serial "Bad Serial"/,
  },
  {
    why: "both a volume and the rebind disk",
    op: "libvirt.detach_disk",
    args: { id: "i-1", disk: { volume: "v", rebind: true } },
    code: "invalid-argument",
    names: /exactly one of volume and rebind/,
  },
  {
    why: "rebind that is not true",
    op: "libvirt.attach_disk",
    args: { id: "i-1", disk: { rebind: "/tmp/x.raw" } },
    code: "invalid-argument",
    names: /disk\.rebind/,
  },
  {
    why: "a volume to grow named by path",
    op: "libvirt.blockresize",
    args: { id: "i-1", bytes: 4096, volume: "/var/lib/bcd/volumes/v.raw" },
    code: "invalid-argument",
    names: /volume "\/var\/lib/,
  },
  {
    why: "a plan volume on the root disk's device",
    op: "libvirt.define",
    args: { plan: { ...SAMPLE_PLAN, volumes: [{ id: "v", serial: "s", readOnly: false, dev: "vda" }] } },
    code: "invalid-argument",
    names: /plan\.volumes\[0\]\.dev "vda" is not vdb to vdy/,
  },
  {
    why: "a plan volume with a device twice",
    op: "libvirt.define",
    args: {
      plan: {
        ...SAMPLE_PLAN,
        volumes: [{ id: "v", serial: "s", readOnly: false, dev: "vdb" }, {
          id: "w",
          serial: "s",
          readOnly: true,
          dev: "vdb",
        }],
      },
    },
    code: "invalid-argument",
    names: /plan\.volumes\[1\]\.dev "vdb" is used twice/,
  },
  {
    why: "a plan volume with a path for a source",
    op: "libvirt.define",
    args: { plan: { ...SAMPLE_PLAN, volumes: [{ id: "v", serial: "s", readOnly: false, dev: "vdb", path: "/x" }] } },
    code: "unknown-field",
    names: /plan\.volumes\[0\]\.path/,
  },
  {
    why: "XML instead of a plan",
    op: "libvirt.define",
    args: { xml: "<domain/>" },
    code: "unknown-field",
    names: /args\.xml/,
  },
  {
    why: "a plan field bcd does not define (a disk path)",
    op: "libvirt.define",
    args: { plan: { ...SAMPLE_PLAN, disk: "/dev/sda" } },
    code: "unknown-field",
    names: /plan\.disk/,
  },
  {
    why: "a qemu command line smuggled into the plan",
    op: "libvirt.define",
    args: { plan: { ...SAMPLE_PLAN, qemuCommandline: ["-drive"] } },
    code: "unknown-field",
    names: /plan\.qemuCommandline/,
  },
  {
    why: "an image field beyond digest and format (a path)",
    op: "libvirt.define",
    args: { plan: { ...SAMPLE_PLAN, image: { sha256: "a".repeat(64), format: "qcow2", path: "/dev/sda" } } },
    code: "unknown-field",
    names: /plan\.image\.path/,
  },
  {
    why: "a digest that is a path",
    op: "libvirt.define",
    args: { plan: { ...SAMPLE_PLAN, image: { sha256: "../../etc/shadow", format: "raw" } } },
    code: "invalid-argument",
    names: /plan\.image\.sha256/,
  },
  {
    why: "a bridge with XML in it",
    op: "libvirt.define",
    args: { plan: { ...SAMPLE_PLAN, nics: [{ mac: "52:54:00:00:00:01", bridge: "br0'/><disk" }] } },
    code: "invalid-argument",
    names: /plan\.nics\[0\]\.bridge/,
  },
  {
    why: "a GPU address that is a path",
    op: "libvirt.define",
    args: { plan: { ...SAMPLE_PLAN, gpus: [{ uuid: "GPU-1", pciBusId: "/dev/nvidia0" }] } },
    code: "invalid-argument",
    names: /plan\.gpus\[0\]\.pciBusId/,
  },
  {
    why: "an allocation id with a newline",
    op: "libvirt.define",
    args: { plan: { ...SAMPLE_PLAN, allocationId: "a\n<x>" } },
    code: "invalid-argument",
    names: /plan\.allocationId/,
  },
  {
    why: "a vCPU count that is a string",
    op: "libvirt.define",
    args: { plan: { ...SAMPLE_PLAN, vcpus: "2" } },
    code: "invalid-argument",
    names: /plan\.vcpus/,
  },
  {
    why: "a save that names where the state file goes",
    op: "libvirt.save",
    args: { id: "i-1", file: "/etc/shadow" },
    code: "unknown-field",
    names: /args\.file/,
  },
  {
    why: "a save of a domain named like a path",
    op: "libvirt.save",
    args: { id: "../i-1" },
    code: "invalid-argument",
    names: /id "\.\.\/i-1"/,
  },
  {
    why: "a restore that brings its own XML",
    op: "libvirt.restore",
    args: { id: "i-1", paused: false, xml: "<domain/>" },
    code: "unknown-field",
    names: /args\.xml/,
  },
  {
    why: "a restore that names a state file",
    op: "libvirt.restore",
    args: { id: "i-1", paused: false, file: "/var/lib/other/memory.save" },
    code: "unknown-field",
    names: /args\.file/,
  },
  {
    why: "a restore without saying running or paused",
    op: "libvirt.restore",
    args: { id: "i-1" },
    code: "invalid-argument",
    names: /paused/,
  },
  {
    why: "a balloon target of zero",
    op: "libvirt.setmem",
    args: { id: "i-1", kib: 0 },
    code: "invalid-argument",
    names: /kib 0/,
  },
  {
    why: "a balloon target that is not an integer",
    op: "libvirt.setmem",
    args: { id: "i-1", kib: 1.5 },
    code: "invalid-argument",
    names: /kib 1\.5/,
  },
  {
    why: "a balloon target beyond any host",
    op: "libvirt.setmem",
    args: { id: "i-1", kib: 2 ** 41 },
    code: "invalid-argument",
    names: /kib/,
  },
  {
    why: "domstats with a flag smuggled in",
    op: "libvirt.domstats",
    args: { id: "i-1", flags: "--raw" },
    code: "unknown-field",
    names: /args\.flags/,
  },
];

Deno.test("libvirt.* arguments: every refusal names op, field and value; no path, XML or extra field passes", async (t) => {
  for (const r of REFUSED) {
    await t.step(r.why, () => {
      assert.throws(() => checkArgs(r.op, r.args), (e) => {
        assert.ok(e instanceof HelperError, String(e));
        assert.equal(e.code, r.code);
        assert.match(e.message, r.names);
        assert.ok(e.message.includes(r.op), e.message);
        return true;
      });
    });
  }
});

Deno.test("libvirt.define returns the plan it checked, field by field", () => {
  assert.deepEqual(checkArgs("libvirt.define", { plan: SAMPLE_PLAN }), { plan: SAMPLE_PLAN });
});
