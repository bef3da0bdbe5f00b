/**
 * An in-memory `virsh`: domains are their XML (the name from `<name>`, the memory from `<memory>`) and a state. It
 * follows libvirt where the contract suite can tell: a verb on a domain in the wrong state is `invalid`, an unknown
 * name `no-domain`, a start past {@link FakeVirshOptions.memoryKiB} `no-memory` ("Cannot allocate memory"), and an
 * undefine of a running domain leaves it running as a transient domain until it is destroyed. `save` writes a real
 * save image header (the domain's XML, then a short stand-in for QEMU's stream) and shuts the domain off; `restore`
 * reads that header and, as libvirt does, refuses an `--xml` whose name or UUID differs from the embedded one; `setmem`
 * needs a virtio balloon and stays within the domain's memory. Hot-plugged disks are live only (`attach-device --live`);
 * an unplug completes in a running guest and stays pending in a paused one, as a guest must acknowledge it.
 *
 * @module
 */
import { buildSaveImage, embeddedXml, parseSaveHeader, SAVE_HEADER_BYTES } from "./save_image.ts";
import { type BalloonStats, type Virsh, type VirshDomain, VirshError, type VirshState } from "./virsh.ts";

/** Options of {@link FakeVirsh}. */
export interface FakeVirshOptions {
  /** Memory the fake host can give running and paused domains (default: unlimited). */
  readonly memoryKiB?: number;
  /** Whether a guest powers off when asked (default true; a guest without ACPI handling ignores it). */
  readonly guestsHonourShutdown?: boolean;
}

interface _Dom {
  xml: string | undefined;
  uuid: string;
  state: VirshState;
  memoryKiB: number;
  /** The balloon target of a running domain, KiB. */
  balloonKiB: number;
  /** What the guest uses, KiB (its balloon statistics report it when the balloon has a period). */
  usedKiB: number;
  /** Bytes per disk target of a running domain (from blockresize). */
  sizes: Map<string, number>;
  /** The disks of a running or paused domain, by target: its definition's at the start, then hot-plugged ones. */
  live: Map<string, string>;
}

/** The `<disk>` elements of `xml` by target device, with their source file. */
function _disks(xml: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of xml.matchAll(/<disk\b[\s\S]*?<\/disk>/g)) {
    const dev = /<target dev='([^']+)'/.exec(m[0])?.[1];
    if (dev) out.set(dev, /<source file='([^']*)'/.exec(m[0])?.[1] ?? "");
  }
  return out;
}

function _tag(xml: string, tag: string): string | undefined {
  return new RegExp(`<${tag}(?:\\s[^>]*)?>([^<]*)</${tag}>`).exec(xml)?.[1]?.trim();
}

/** The fake. `calls` records every verb with its domain name, for tests that assert what ran. */
export class FakeVirsh implements Virsh {
  readonly #doms = new Map<string, _Dom>();
  readonly #opts: FakeVirshOptions;
  readonly calls: string[] = [];
  readonly #counts = new Map<string, number>();
  /** Moves with every change of a domain (libvirt's change marker); `markerless` turns the marker off. */
  #generation = 0;
  markerless = false;

  constructor(opts: FakeVirshOptions = {}) {
    this.#opts = opts;
  }

  #get(name: string): _Dom {
    const d = this.#doms.get(name);
    if (!d) throw new VirshError("no-domain", `error: failed to get domain '${name}'`);
    return d;
  }

  #need(name: string, d: _Dom, states: readonly VirshState[], what: string): void {
    if (!states.includes(d.state)) {
      throw new VirshError("invalid", `Requested operation is not valid: domain '${name}' is ${what}`);
    }
  }

  list(): Promise<VirshDomain[]> {
    this.#counts.set("list", (this.#counts.get("list") ?? 0) + 1);
    const out = [...this.#doms.entries()].map(([name, d]) => ({ name, state: d.state }));
    return Promise.resolve(out.sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  uuids(): Promise<Map<string, string>> {
    return Promise.resolve(new Map([...this.#doms.entries()].map(([n, d]) => [n, d.uuid])));
  }

  changeMarker(): Promise<string | undefined> {
    return Promise.resolve(this.markerless ? undefined : `gen-${this.#generation}`);
  }

  /** How many times each verb ran (tests of caching). */
  count(verb: string): number {
    return this.#counts.get(verb) ?? 0;
  }

  dumpxml(name: string): Promise<string> {
    this.#counts.set("dumpxml", (this.#counts.get("dumpxml") ?? 0) + 1);
    try {
      const d = this.#get(name);
      if (d.xml === undefined) throw new VirshError("no-domain", `domain '${name}' is transient`);
      return Promise.resolve(d.xml);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  define(xml: string): Promise<string> {
    const name = _tag(xml, "name");
    const mem = _tag(xml, "memory");
    const unit = /<memory\s+unit=['"](\w+)['"]/.exec(xml)?.[1] ?? "KiB";
    const perUnit: Record<string, number> = { KiB: 1, k: 1, MiB: 1024, M: 1024, GiB: 1024 * 1024, G: 1024 * 1024 };
    if (!/^<domain[\s>]/.test(xml.trimStart()) || !name || !mem || !/^\d+$/.test(mem) || !perUnit[unit]) {
      return Promise.reject(new VirshError("invalid", "XML error: a domain needs <domain>, <name> and <memory>"));
    }
    this.calls.push(`define ${name}`);
    this.#generation++;
    const uuid = _tag(xml, "uuid");
    const have = this.#doms.get(name);
    if (have && uuid !== have.uuid) {
      return Promise.reject(
        new VirshError("invalid", `operation failed: domain '${name}' already exists with uuid ${have.uuid}`),
      );
    }
    if (have) {
      have.xml = xml;
      if (have.state === "stopped") have.memoryKiB = Number(mem) * perUnit[unit]!;
    } else {
      this.#doms.set(name, {
        xml,
        uuid: uuid ?? crypto.randomUUID(),
        state: "stopped",
        memoryKiB: Number(mem) * perUnit[unit]!,
        balloonKiB: Number(mem) * perUnit[unit]!,
        usedKiB: Math.floor(Number(mem) * perUnit[unit]! / 8),
        sizes: new Map(),
        live: new Map(),
      });
    }
    return Promise.resolve(name);
  }

  start(name: string, paused: boolean): Promise<void> {
    this.calls.push(`start ${name}${paused ? " --paused" : ""}`);
    return this.#sync(() => {
      const d = this.#get(name);
      this.#need(name, d, ["stopped"], "already active");
      const used = [...this.#doms.values()].filter((o) => o.state !== "stopped").reduce((s, o) => s + o.memoryKiB, 0);
      if (this.#opts.memoryKiB !== undefined && used + d.memoryKiB > this.#opts.memoryKiB) {
        throw new VirshError("no-memory", `error: internal error: process exited: Cannot allocate memory`);
      }
      d.state = paused ? "paused" : "running";
      d.live = _disks(d.xml ?? "");
    });
  }

  /** The disks the domain has now (its definition's when stopped), target to source file. */
  liveDisks(name: string): Promise<Map<string, string>> {
    try {
      const d = this.#get(name);
      return Promise.resolve(d.state === "stopped" ? _disks(d.xml ?? "") : new Map(d.live));
    } catch (e) {
      return Promise.reject(e);
    }
  }

  attachDevice(name: string, xml: string): Promise<void> {
    this.calls.push(`attach-device ${name}`);
    return this.#sync(() => {
      const d = this.#get(name);
      this.#need(name, d, ["running", "paused"], "not running");
      const [disk] = _disks(xml);
      if (!disk) throw new VirshError("invalid", "XML error: only a <disk> with a target is supported here");
      if (d.live.has(disk[0])) throw new VirshError("invalid", `target ${disk[0]} already exists`);
      d.live.set(disk[0], disk[1]);
    });
  }

  detachDevice(name: string, xml: string): Promise<void> {
    this.calls.push(`detach-device ${name}`);
    return this.#sync(() => {
      const d = this.#get(name);
      this.#need(name, d, ["running", "paused"], "not running");
      const [disk] = _disks(xml);
      if (!disk || !d.live.has(disk[0])) throw new VirshError("failed", `disk ${disk?.[0]} not found`);
      // As with QEMU, a paused guest cannot acknowledge the unplug: the request stands and the disk stays.
      if (d.state === "running") d.live.delete(disk[0]);
    });
  }

  suspend(name: string): Promise<void> {
    this.calls.push(`suspend ${name}`);
    return this.#sync(() => {
      const d = this.#get(name);
      this.#need(name, d, ["running", "paused"], "not running");
      d.state = "paused";
    });
  }

  resume(name: string): Promise<void> {
    this.calls.push(`resume ${name}`);
    return this.#sync(() => {
      const d = this.#get(name);
      this.#need(name, d, ["paused", "running"], "not running");
      d.state = "running";
    });
  }

  shutdown(name: string): Promise<void> {
    this.calls.push(`shutdown ${name}`);
    return this.#sync(() => {
      const d = this.#get(name);
      this.#need(name, d, ["running", "paused"], "not running");
      if (this.#opts.guestsHonourShutdown !== false && d.state === "running") this.#off(name, d);
    });
  }

  destroy(name: string): Promise<void> {
    this.calls.push(`destroy ${name}`);
    return this.#sync(() => {
      const d = this.#get(name);
      this.#need(name, d, ["running", "paused"], "not running");
      this.#off(name, d);
    });
  }

  undefine(name: string): Promise<void> {
    this.calls.push(`undefine ${name}`);
    return this.#sync(() => {
      const d = this.#get(name);
      if (d.xml === undefined) {
        throw new VirshError("invalid", `Requested operation is not valid: '${name}' is transient`);
      }
      if (d.state === "stopped") this.#doms.delete(name);
      else d.xml = undefined;
    });
  }

  blockresize(name: string, target: string, bytes: number): Promise<void> {
    this.calls.push(`blockresize ${name} ${target} ${bytes}`);
    return this.#sync(() => {
      const d = this.#get(name);
      this.#need(name, d, ["running", "paused"], "not running");
      d.sizes.set(target, bytes);
    });
  }

  save(name: string, file: string): Promise<void> {
    this.calls.push(`save ${name}`);
    try {
      const d = this.#get(name);
      this.#need(name, d, ["running", "paused"], "not running");
      const xml = d.xml ?? `<domain><name>${name}</name><uuid>${d.uuid}</uuid></domain>`;
      Deno.writeFileSync(file, buildSaveImage(xml, d.state === "running", new TextEncoder().encode("QEVM fake")), {
        mode: 0o600,
      });
      this.#off(name, d);
      this.#generation++;
      return Promise.resolve();
    } catch (e) {
      return Promise.reject(e);
    }
  }

  async restore(file: string, xml: string, paused: boolean): Promise<void> {
    this.calls.push(`restore ${_tag(xml, "name")}${paused ? " --paused" : ""}`);
    let bytes: Uint8Array;
    try {
      bytes = await Deno.readFile(file);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) throw new VirshError("failed", `error: cannot open ${file}`);
      throw e;
    }
    const h = parseSaveHeader(bytes);
    const saved = embeddedXml(h, bytes.subarray(SAVE_HEADER_BYTES, SAVE_HEADER_BYTES + h.dataLen));
    const [name, uuid] = [_tag(xml, "name"), _tag(xml, "uuid")];
    if (uuid !== _tag(saved, "uuid")) {
      throw new VirshError("invalid", `unsupported configuration: Target domain uuid ${uuid} does not match source`);
    }
    if (name !== _tag(saved, "name")) {
      throw new VirshError("invalid", `unsupported configuration: Target domain name '${name}' does not match source`);
    }
    const have = this.#doms.get(name!);
    if (have && have.state !== "stopped") {
      throw new VirshError("invalid", `Requested operation is not valid: domain '${name}' is already active`);
    }
    if (!have) await this.define(xml);
    const d = this.#doms.get(name!)!;
    d.state = paused ? "paused" : "running";
    d.live = _disks(xml);
    this.#generation++;
  }

  setmem(name: string, kib: number): Promise<void> {
    this.calls.push(`setmem ${name} ${kib}`);
    return this.#sync(() => {
      const d = this.#get(name);
      this.#need(name, d, ["running", "paused"], "not running");
      if (!/<memballoon\s+model=['"]virtio['"]/.test(d.xml ?? "")) {
        throw new VirshError(
          "invalid",
          "Requested operation is not valid: Unable to change memory of active domain without the balloon device",
        );
      }
      if (kib > d.memoryKiB) {
        throw new VirshError("invalid", "invalid argument: cannot set memory higher than max memory");
      }
      d.balloonKiB = kib;
    });
  }

  balloon(name: string): Promise<BalloonStats> {
    try {
      const d = this.#get(name);
      return Promise.resolve(
        d.state === "stopped"
          ? { currentKiB: undefined, maximumKiB: undefined }
          : /<stats\s+period=/.test(d.xml ?? "")
          ? {
            currentKiB: d.balloonKiB,
            maximumKiB: d.memoryKiB,
            availableKiB: d.balloonKiB,
            usableKiB: Math.max(0, d.balloonKiB - d.usedKiB),
          }
          : { currentKiB: d.balloonKiB, maximumKiB: d.memoryKiB },
      );
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** Sets what a domain's guest uses, KiB (its balloon statistics report it). */
  setGuestUse(name: string, kib: number): void {
    this.#get(name).usedKiB = kib;
  }

  /** The size a running domain's disk was last grown to (tests). */
  sizeOf(name: string, target: string): number | undefined {
    return this.#doms.get(name)?.sizes.get(target);
  }

  #off(name: string, d: _Dom): void {
    d.state = "stopped";
    d.balloonKiB = d.memoryKiB;
    d.sizes.clear();
    d.live.clear();
    if (d.xml === undefined) this.#doms.delete(name);
  }

  #sync(f: () => void): Promise<void> {
    try {
      f();
      this.#generation++;
      return Promise.resolve();
    } catch (e) {
      return Promise.reject(e);
    }
  }
}
