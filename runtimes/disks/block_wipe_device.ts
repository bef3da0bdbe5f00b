/**
 * The real {@link WipeDevice}: a whole disk under `/dev`, opened read-write by root after `DiskGuard` checked it.
 *
 * Which device methods it offers (judgement calls, written down):
 * - `blkdiscard-secure` and `blkdiscard` when the queue takes discards (`queue/discard_max_bytes` > 0), run with
 *   util-linux's `blkdiscard` (Deno has no ioctl). Whether secure discard is supported shows only by trying it, so
 *   it is offered with discard and a refusal moves the ladder on (loop devices refuse it: EOPNOTSUPP);
 * - NVMe sanitize/format and ATA secure erase are not offered yet: they need `nvme-cli`/`hdparm` capability parsing
 *   (sanitize capabilities, the security frozen state) that no device on the build hosts can exercise, and an
 *   untested firmware erase is worse than a verified overwrite. The ladder and the port already carry them.
 *
 * Reads after a flush come from the device: `flush()` is `fsync` plus `blockdev --flushbufs` (BLKFLSBUF), which
 * writes back and drops the block device's page cache, so a verification never reads what the wipe left in memory.
 *
 * @module
 */
import { type DeviceMethod, DeviceMethodFailed, type WipeDevice } from "../../core/disks/wipe_device.ts";
import { type DeployTarget, PartitionTableError } from "../../core/disks/deploy.ts";
import { readInt } from "../host/sysfs.ts";

/** The tools it runs (absolute, so PATH cannot swap them). */
export interface BlockWipeTools {
  readonly blkdiscard?: string;
  readonly blockdev?: string;
  readonly partx?: string;
}

/** A whole disk opened for wiping. Close it when done. */
export class BlockWipeDevice implements WipeDevice, DeployTarget {
  readonly #file: Deno.FsFile;
  readonly #path: string;
  readonly #discard: boolean;
  readonly #tools: Required<BlockWipeTools>;

  private constructor(
    file: Deno.FsFile,
    path: string,
    readonly sizeBytes: number,
    discard: boolean,
    tools: Required<BlockWipeTools>,
  ) {
    this.#file = file;
    this.#path = path;
    this.#discard = discard;
    this.#tools = tools;
  }

  /** Opens `/dev/<kernelName>` (sizes and queue limits from `sys`). */
  static async open(kernelName: string, o: { sys?: string; tools?: BlockWipeTools } = {}): Promise<BlockWipeDevice> {
    const sys = `${o.sys ?? "/sys"}/block/${kernelName}`;
    const sectors = await readInt(`${sys}/size`);
    if (sectors === undefined || sectors <= 0) throw new RangeError(`${kernelName}: no size in ${sys}/size`);
    const discard = ((await readInt(`${sys}/queue/discard_max_bytes`)) ?? 0) > 0;
    const path = `/dev/${kernelName}`;
    const file = await Deno.open(path, { read: true, write: true });
    return new BlockWipeDevice(file, path, sectors * 512, discard, {
      blkdiscard: o.tools?.blkdiscard ?? "/usr/sbin/blkdiscard",
      blockdev: o.tools?.blockdev ?? "/usr/sbin/blockdev",
      partx: o.tools?.partx ?? "/usr/bin/partx",
    });
  }

  methods(): Promise<readonly DeviceMethod[]> {
    return Promise.resolve(this.#discard ? ["blkdiscard-secure", "blkdiscard"] : []);
  }

  async erase(method: DeviceMethod): Promise<void> {
    if (method !== "blkdiscard" && method !== "blkdiscard-secure") {
      throw new DeviceMethodFailed(method, `${method}: not offered by ${this.#path}`);
    }
    const args = method === "blkdiscard-secure" ? ["--secure", this.#path] : [this.#path];
    const out = await new Deno.Command(this.#tools.blkdiscard, { args, stdout: "null", stderr: "piped" }).output();
    if (!out.success) {
      const words = new TextDecoder().decode(out.stderr).trim().slice(0, 512);
      throw new DeviceMethodFailed(method, `${method}: blkdiscard exited ${out.code}: ${words}`);
    }
  }

  /** `blkdiscard --zeroout` of the range (BLKZEROOUT: the device's write-zeroes, or the kernel writes them). */
  async zeroRange(offset: number, length: number): Promise<void> {
    const words = await this.#tool(this.#tools.blkdiscard, [
      "--zeroout",
      "--offset",
      String(offset),
      "--length",
      String(length),
      this.#path,
    ]);
    if (words !== undefined) throw new Error(`${this.#path}: ${words}`);
  }

  async write(offset: number, data: Uint8Array): Promise<void> {
    await this.#file.seek(offset, Deno.SeekMode.Start);
    let done = 0;
    while (done < data.length) done += await this.#file.write(data.subarray(done));
  }

  async read(offset: number, length: number): Promise<Uint8Array> {
    await this.#file.seek(offset, Deno.SeekMode.Start);
    const buf = new Uint8Array(length);
    let done = 0;
    while (done < length) {
      const n = await this.#file.read(buf.subarray(done));
      if (n === null) throw new RangeError(`${this.#path}: end of device at ${offset + done}, wanted ${length} bytes`);
      done += n;
    }
    return buf;
  }

  async flush(): Promise<void> {
    await this.#file.sync();
    const words = await this.#tool(this.#tools.blockdev, ["--flushbufs", this.#path]);
    if (words !== undefined) throw new Error(`${this.#path}: ${words}`);
  }

  /**
   * The kernel reads the partition table again: `blockdev --rereadpt` (BLKRRPART), then `partx --update`, which adds,
   * resizes and drops the kernel's partitions to match the table. Both run because BLKRRPART may answer success and
   * change nothing (loop disks on this build host's kernel do), and fails EBUSY while a partition is open; it fails
   * only when partx fails too, with both tools' words.
   */
  async rereadPartitions(): Promise<void> {
    const rr = await this.#tool(this.#tools.blockdev, ["--rereadpt", this.#path]);
    const px = await this.#tool(this.#tools.partx, ["--update", this.#path]);
    if (px !== undefined) {
      throw new PartitionTableError(
        `re-reading the partition table of ${this.#path}: ${rr ?? "blockdev --rereadpt ok"}; ${px}`,
      );
    }
  }

  /** Runs a tool; `undefined` on success, its words on failure. */
  async #tool(cmd: string, args: string[]): Promise<string | undefined> {
    const out = await new Deno.Command(cmd, { args, stdout: "null", stderr: "piped" }).output();
    if (out.success) return undefined;
    return `${cmd.split("/").at(-1)} ${args[0]} exited ${out.code}: ${new TextDecoder().decode(out.stderr).trim()}`;
  }

  close(): void {
    this.#file.close();
  }
}
