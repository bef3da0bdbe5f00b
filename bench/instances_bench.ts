/**
 * `deno task bench:instances`: the `libvirt-kvm` runtime against libvirt itself, on a real libvirtd (started here when
 * none answers; domains of type `qemu`, TCG), in one run with interleaved rounds and medians:
 *
 * - create-to-running of one domain through bcd (`LibvirtRuntime.define` + `start` over the in-process root half: the
 *   overlay, the seed ISO, the root-side file checks, XML rendering, `virsh define`, the overlay check again, `virsh
 *   start`; the base image already verified and kept) against the same XML through `virsh define` + `virsh start`
 *   directly. Goal ≤ 1.3×.
 * - an idle converge pass over 100 defined domains (`InstancesConverger.observe` + `plan` with every domain as the
 *   spec wants it) against one `virsh list --all`. Goal ≤ 50 ms, printed with its ratio to the anchor. The same pass
 *   without libvirt's change marker (every listing asks libvirt: two `virsh list` calls, the behaviour before the
 *   marker) is measured in the same rounds and printed beside it.
 *
 * @module
 */
import { InstancesConverger } from "../core/converge/instances/converger.ts";
import type { DomainRecord } from "../core/converge/instances/runtime.ts";
import { ensureLibvirtd } from "../fixtures/libvirt/libvirtd.ts";
import { makeQcow2, sha256Hex, startImageServer } from "../fixtures/libvirt/image_server.ts";
import { renderDomainXml } from "../runtimes/libvirt/domain_xml.ts";
import { LibvirtHost } from "../runtimes/libvirt/libvirt_host.ts";
import { LibvirtRuntime } from "../runtimes/libvirt/libvirt_runtime.ts";
import { CommandVirsh } from "../runtimes/libvirt/virsh.ts";

const ROUNDS = Number(Deno.env.get("BCD_BENCH_ROUNDS") ?? "5");
const DOMAINS = Number(Deno.env.get("BCD_BENCH_DOMAINS") ?? "100");
const MiB = 1024 * 1024;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const lv = await ensureLibvirtd();
if ("skip" in lv) {
  console.log(`bench:instances skipped: ${lv.skip}`);
  Deno.exit(0);
}
const srv = await startImageServer();
if ("skip" in srv) {
  console.log(`bench:instances skipped: ${srv.skip}`);
  await lv.stop();
  Deno.exit(0);
}
const dir = await Deno.makeTempDir({ prefix: "bcd-bench-instances-" });
await Deno.chmod(dir, 0o711);
const virsh = new CommandVirsh({ uri: lv.uri });
const owner = `bench-${crypto.randomUUID().slice(0, 8)}`;
const host = new LibvirtHost({
  virsh,
  dataDir: `${dir}/data`,
  domainType: "qemu",
  owner,
  bridges: [],
});
const rt = new LibvirtRuntime({ host, dataDir: `${dir}/data`, fetch: srv.fetch, shutdownGraceMs: 0 });
const tag = crypto.randomUUID().slice(0, 6);
const made: string[] = [];
try {
  const base = await makeQcow2(dir, "base.qcow2", "64M");
  const sha = await sha256Hex(base);
  srv.put("/base.qcow2", base);
  const record = (id: string): DomainRecord => ({
    id,
    allocationId: "bench",
    vcpus: 1,
    memoryBytes: 64 * MiB,
    imageSha256: sha,
    gpus: [],
    launch: {
      image: { url: `${srv.origin}/base.qcow2`, sha256: sha, format: "qcow2" },
      diskBytes: 0,
      nics: [],
      gpus: [],
      placement: null,
      hostname: "",
      userData: new Uint8Array(0),
    },
  });
  // Warm: the image is downloaded and verified once, libvirt's caches are filled.
  await rt.define(record(`bench-${tag}-warm`));
  made.push(`bench-${tag}-warm`);

  const viaBcd: number[] = [];
  const direct: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const a = `bench-${tag}-b${r}`;
    let t = performance.now();
    await rt.define(record(a));
    await rt.start(a, true);
    viaBcd.push(performance.now() - t);
    made.push(a);
    // The same XML bcd rendered, for a domain of its own name and files, straight through virsh.
    const d = `bench-${tag}-d${r}`;
    await rt.define(record(d));
    await virsh.undefine(d);
    const xml = renderDomainXml(
      {
        id: d,
        allocationId: "bench",
        vcpus: 1,
        memoryMiB: 64,
        image: { sha256: sha, format: "qcow2" },
        nics: [],
        gpus: [],
        placement: null,
        seed: true,
        restoredFrom: null,
      },
      "qemu",
      host.paths,
      owner,
    );
    t = performance.now();
    await virsh.define(xml);
    await virsh.start(d, true);
    direct.push(performance.now() - t);
    made.push(d);
  }
  const c1 = median(viaBcd), c0 = median(direct);
  console.log(
    `create-to-running (paused start): bcd ${c1.toFixed(0)} ms, virsh define+start ${c0.toFixed(0)} ms: ` +
      `${(c1 / c0).toFixed(2)}x (goal <= 1.3x)`,
  );
  for (const n of made) await rt.delete(n);
  made.length = 0;

  for (let i = 0; i < DOMAINS; i++) {
    const id = `bench-${tag}-i${i}`;
    await rt.define(record(id));
    made.push(id);
  }
  const conv = new InstancesConverger([rt]);
  // The same host without the change marker: every listing is two virsh lists.
  const markerless = new LibvirtHost({
    virsh: new CommandVirsh({ uri: lv.uri, stateDirs: [] }),
    dataDir: `${dir}/data`,
    domainType: "qemu",
    owner,
    bridges: [],
  });
  const conv0 = new InstancesConverger([
    new LibvirtRuntime({ host: markerless, dataDir: `${dir}/data`, fetch: srv.fetch, shutdownGraceMs: 0 }),
  ]);
  const spec = {
    instances: made.map((id) => ({ id, runtime: "libvirt-kvm", state: 3, vcpus: 1, memory_bytes: 64 * MiB })),
  };
  await conv.observe();
  await conv0.observe();
  // libvirt's marker is trusted once its last change has settled (MARKER_SETTLE_MS): wait for that state, bounded.
  const until = Date.now() + 30_000;
  while ((await virsh.changeMarker()) === undefined) {
    if (Date.now() > until) throw new Error("libvirt's change marker never settled (another client keeps changing it)");
    await new Promise((r) => setTimeout(r, 100));
  }
  await conv.observe();
  const pass: number[] = [];
  const pass0: number[] = [];
  const list: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    let t = performance.now();
    const actions = conv.plan(spec, await conv.observe());
    pass.push(performance.now() - t);
    if (actions.length !== 0) throw new Error(`an idle pass planned ${actions.length} actions`);
    t = performance.now();
    const actions0 = conv0.plan(spec, await conv0.observe());
    pass0.push(performance.now() - t);
    if (actions0.length !== 0) throw new Error(`an idle pass planned ${actions0.length} actions`);
    t = performance.now();
    await virsh.list();
    list.push(performance.now() - t);
  }
  const p = median(pass), p0 = median(pass0), l = median(list);
  console.log(
    `idle converge pass over ${DOMAINS} domains: ${p.toFixed(1)} ms (goal <= 50 ms), one virsh list --all ` +
      `${l.toFixed(1)} ms: ${(p / l).toFixed(2)}x; without the change marker ${p0.toFixed(1)} ms: ` +
      `${(p0 / l).toFixed(2)}x`,
  );
} finally {
  for (const n of made) await rt.delete(n).catch((e) => console.error(`cleanup ${n}: ${e}`));
  await srv.close();
  await Deno.remove(dir, { recursive: true });
  await lv.stop();
}
