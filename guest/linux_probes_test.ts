import assert from "node:assert/strict";
import { memTotal, mountFacts, osReleaseId, parseStatus } from "./linux_probes.ts";
import { parseMountInfo, unescapeMount } from "./proc/mountinfo.ts";

const MOUNTINFO = `22 1 0:21 / / rw,relatime shared:1 - overlay overlay rw,lowerdir=/a,upperdir=/b
40 22 7:0 / /run/rt/distro ro,relatime - erofs /dev/loop0 ro,user_xattr
41 22 0:50 / /run/rt/my\\040dir rw - tmpfs tmp\\011fs rw,size=1024k
42 22 0:51 / /run/rt/my\\040dir rw - tmpfs tmpfs rw,size=2048k
`;

Deno.test("the mount table with its escapes", () => {
  const m = parseMountInfo(MOUNTINFO);
  assert.equal(m.length, 4);
  assert.equal(m[2]!.mountPoint, "/run/rt/my dir");
  assert.equal(m[2]!.source, "tmp\tfs");
  assert.equal(unescapeMount("a\\134b\\012"), "a\\b\n");
  assert.deepEqual(mountFacts(m, [["distro", "/run/rt/distro"], ["tmpfs", "/run/rt/my dir"], ["root", "/nope"]]), [
    ["distro.count", "1"],
    ["distro.type", "erofs"],
    ["distro.source", "/dev/loop0"],
    ["distro.options", "ro,relatime"],
    ["distro.super", "ro,user_xattr"],
    ["tmpfs.count", "2"],
    ["tmpfs.type", "tmpfs"],
    ["tmpfs.source", "tmpfs"],
    ["tmpfs.options", "rw"],
    ["tmpfs.super", "rw,size=2048k"],
    ["root.count", "0"],
  ]);
  assert.throws(() => parseMountInfo("1 2 3 4 5"), SyntaxError);
});

Deno.test("the kernel's records of a process, os-release, and the guest's memory", () => {
  assert.deepEqual(parseStatus("Name:\tsh\nState:\tS (sleeping)\nPPid:\t1\n"), { state: "S", ppid: "1" });
  assert.equal(parseStatus("Name:\tsh\n"), null);
  assert.equal(osReleaseId('NAME="Debian"\nID=debian\n'), "debian");
  assert.equal(osReleaseId('ID="ubuntu"'), "ubuntu");
  assert.equal(osReleaseId("NAME=x"), null);
  assert.equal(memTotal("MemTotal:        2048 kB\nMemFree: 1 kB\n"), 2048 * 1024);
});
