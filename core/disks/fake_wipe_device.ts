/**
 * The in-memory {@link WipeDevice}: the bytes of a small disk, the device methods it is told to offer, and which of
 * them fail. Discard zeroes the bytes unless `discardKeepsData` (a device whose discard does not read back as zeros).
 *
 * @module
 */
import { type DeviceMethod, DeviceMethodFailed, type WipeDevice } from "./wipe_device.ts";
import type { DeployTarget } from "./deploy_target.ts";

/** How the fake behaves. */
export interface FakeWipeDeviceOptions {
  readonly sizeBytes: number;
  readonly methods?: readonly DeviceMethod[];
  /** Methods that are offered but fail when run. */
  readonly failing?: readonly DeviceMethod[];
  /** Discard leaves the old bytes readable (allowed by the block layer: discard is a hint). */
  readonly discardKeepsData?: boolean;
}

/** A disk in memory. */
export class FakeWipeDevice implements WipeDevice, DeployTarget {
  readonly sizeBytes: number;
  readonly bytes: Uint8Array;
  /** The device methods run, in order. */
  readonly erased: DeviceMethod[] = [];
  flushes = 0;
  rereads = 0;
  readonly #o: FakeWipeDeviceOptions;

  constructor(o: FakeWipeDeviceOptions) {
    if (o.sizeBytes % 512 !== 0 || o.sizeBytes <= 0) throw new RangeError(`size ${o.sizeBytes} is not whole sectors`);
    this.#o = o;
    this.sizeBytes = o.sizeBytes;
    this.bytes = new Uint8Array(o.sizeBytes);
  }

  methods(): Promise<readonly DeviceMethod[]> {
    return Promise.resolve(this.#o.methods ?? []);
  }

  erase(method: DeviceMethod): Promise<void> {
    if (!(this.#o.methods ?? []).includes(method)) {
      return Promise.reject(new DeviceMethodFailed(method, `${method}: not offered by this device`));
    }
    if ((this.#o.failing ?? []).includes(method)) {
      return Promise.reject(new DeviceMethodFailed(method, `${method}: the device refused it`));
    }
    this.erased.push(method);
    const discard = method === "blkdiscard" || method === "blkdiscard-secure";
    if (!(discard && this.#o.discardKeepsData)) this.bytes.fill(0);
    return Promise.resolve();
  }

  // deno-lint-ignore require-await
  async write(offset: number, data: Uint8Array): Promise<void> {
    _bounds(this.sizeBytes, offset, data.length);
    this.bytes.set(data, offset);
  }

  // deno-lint-ignore require-await
  async read(offset: number, length: number): Promise<Uint8Array> {
    _bounds(this.sizeBytes, offset, length);
    return this.bytes.slice(offset, offset + length);
  }

  rereadPartitions(): Promise<void> {
    this.rereads++;
    return Promise.resolve();
  }

  flush(): Promise<void> {
    this.flushes++;
    return Promise.resolve();
  }
}

function _bounds(size: number, offset: number, length: number): void {
  if (offset % 512 !== 0 || offset < 0 || offset + length > size) {
    throw new RangeError(`${length} bytes at ${offset} are not whole sectors inside the ${size}-byte disk`);
  }
}
