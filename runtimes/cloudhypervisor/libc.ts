/**
 * The few libc calls the root helper needs for cloud-hypervisor's NICs and that Deno has no API for: a unix socket
 * that sends file descriptors (`sendmsg` with `SCM_RIGHTS`), opening a tap (`open("/dev/net/tun")` + `TUNSETIFF`),
 * and, for tests, entering a network namespace (`setns`) and receiving descriptors (`recvmsg`). Through `Deno.dlopen`
 * of glibc (x86_64 and aarch64 Linux: the struct layouts below are LP64's).
 *
 * Why FFI in the helper and not in the node: FFI needs `--allow-ffi`, which in Deno escapes every other permission
 * (it is as strong as `--allow-all`), and opening `/dev/net/tun` needs `/dev` access, which Deno grants only to
 * `--allow-all`. The node runs scoped; the helper already runs with `--allow-all` as root. So root opens each tap and
 * hands it to the VMM itself, in the same `sendmsg` that carries the API request, and the node never holds a tap fd.
 *
 * Calls that can wait (`connect`, `sendmsg`, `recv`, `recvmsg`, `accept4`) are `nonblocking` FFI symbols: they run on
 * a worker thread and answer a promise, so a slow VMM never blocks the helper's event loop. Their failures carry no
 * errno (it is the worker thread's); the synchronous ones read `errno` on the calling thread.
 *
 * @module
 */

const SYMBOLS = {
  socket: { parameters: ["i32", "i32", "i32"], result: "i32" },
  connect: { parameters: ["i32", "buffer", "u32"], result: "i32", nonblocking: true },
  bind: { parameters: ["i32", "buffer", "u32"], result: "i32" },
  listen: { parameters: ["i32", "i32"], result: "i32" },
  accept4: { parameters: ["i32", "pointer", "pointer", "i32"], result: "i32", nonblocking: true },
  sendmsg: { parameters: ["i32", "buffer", "i32"], result: "isize", nonblocking: true },
  recvmsg: { parameters: ["i32", "buffer", "i32"], result: "isize", nonblocking: true },
  recv: { parameters: ["i32", "buffer", "usize", "i32"], result: "isize", nonblocking: true },
  write: { parameters: ["i32", "buffer", "usize"], result: "isize" },
  read: { parameters: ["i32", "buffer", "usize"], result: "isize" },
  close: { parameters: ["i32"], result: "i32" },
  shutdown: { parameters: ["i32", "i32"], result: "i32" },
  open: { parameters: ["buffer", "i32", "i32"], result: "i32" },
  ioctl: { parameters: ["i32", "u64", "buffer"], result: "i32" },
  setsockopt: { parameters: ["i32", "i32", "i32", "buffer", "u32"], result: "i32" },
  setns: { parameters: ["i32", "i32"], result: "i32" },
  strerror: { parameters: ["i32"], result: "pointer" },
  __errno_location: { parameters: [], result: "pointer" },
} as const;

let _lib: Deno.DynamicLibrary<typeof SYMBOLS> | undefined;

/** glibc's symbols (opened once). */
export function libc(): Deno.DynamicLibrary<typeof SYMBOLS>["symbols"] {
  _lib ??= Deno.dlopen("libc.so.6", SYMBOLS);
  return _lib.symbols;
}

/** A failed libc call: the call, and `errno` with its text where it is known. */
export class LibcError extends Error {
  override name = "LibcError";
  constructor(readonly call: string, readonly errno: number | undefined) {
    super(`${call} failed${errno === undefined ? "" : `: ${_strerror(errno)} (errno ${errno})`}`);
  }
}

/** Throws {@link LibcError} with this thread's errno when `r` is negative. */
export function check(call: string, r: number | bigint): number {
  if (Number(r) >= 0) return Number(r);
  const p = libc().__errno_location()!;
  throw new LibcError(call, new Deno.UnsafePointerView(p).getInt32());
}

function _strerror(e: number): string {
  const p = libc().strerror(e);
  return p ? new Deno.UnsafePointerView(p).getCString() : `errno ${e}`;
}

export const AF_UNIX = 1;
export const SOCK_STREAM = 1;
export const SOCK_CLOEXEC = 0x80000;
export const O_RDONLY = 0;
export const O_RDWR = 2;
export const O_CLOEXEC = 0x80000;
export const SOL_SOCKET = 1;
export const SCM_RIGHTS = 1;
export const SO_RCVTIMEO = 20;
export const MSG_CMSG_CLOEXEC = 0x40000000;
export const SO_SNDTIMEO = 21;
export const CLONE_NEWNET = 0x40000000;
export const TUNSETIFF = 0x400454ca;
export const TUNGETIFF = 0x800454d2;
export const IFF_TAP = 0x0002;
export const IFF_NO_PI = 0x1000;
export const IFF_VNET_HDR = 0x4000;
/** The most descriptors one message carries (16 NICs, bcd's bound). */
export const MAX_FDS = 16;

/** A NUL-terminated C string. */
export function cstr(s: string): Uint8Array<ArrayBuffer> {
  const b = new TextEncoder().encode(s);
  const out = new Uint8Array(b.length + 1);
  out.set(b);
  return out;
}

/** `struct sockaddr_un` for `path` (at most 107 bytes). */
export function sockaddrUn(path: string): Uint8Array<ArrayBuffer> {
  const p = new TextEncoder().encode(path);
  if (p.length > 107) throw new RangeError(`unix socket path ${path} is longer than 107 bytes`);
  const a = new Uint8Array(110);
  new DataView(a.buffer).setUint16(0, AF_UNIX, true);
  a.set(p, 2);
  return a;
}

/** `struct ifreq` naming `name` with `flags`. */
export function ifreq(name: string, flags: number): Uint8Array<ArrayBuffer> {
  const n = new TextEncoder().encode(name);
  if (n.length > 15) throw new RangeError(`interface name ${name} is longer than 15 bytes`);
  const r = new Uint8Array(40);
  r.set(n);
  new DataView(r.buffer).setInt16(16, flags, true);
  return r;
}

/** A pointer's address as a bigint (0 for none). */
function _addr(b: Uint8Array<ArrayBuffer>): bigint {
  const p = Deno.UnsafePointer.of(b);
  return p ? BigInt(Deno.UnsafePointer.value(p)) : 0n;
}

/** What a `struct msghdr` points at: kept alive with it while a call runs. */
export interface MsgHdr {
  readonly hdr: Uint8Array<ArrayBuffer>;
  readonly iov: Uint8Array<ArrayBuffer>;
  readonly data: Uint8Array<ArrayBuffer>;
  readonly control: Uint8Array<ArrayBuffer>;
}

/**
 * A `struct msghdr` (56 bytes) with one `iovec` over `data` and, when `fds` is given, one `SCM_RIGHTS` control
 * message carrying them; for receiving, `controlFds` reserves room for that many.
 */
export function msghdr(data: Uint8Array<ArrayBuffer>, fds: readonly number[], controlFds = 0): MsgHdr {
  if (fds.length > MAX_FDS || controlFds > MAX_FDS) throw new RangeError(`more than ${MAX_FDS} descriptors`);
  const iov = new Uint8Array(16);
  const iv = new DataView(iov.buffer);
  iv.setBigUint64(0, _addr(data), true);
  iv.setBigUint64(8, BigInt(data.length), true);
  const n = Math.max(fds.length, controlFds);
  const space = n === 0 ? 0 : 16 + Math.ceil((n * 4) / 8) * 8;
  const control = new Uint8Array(Math.max(space, 8));
  if (fds.length > 0) {
    const cv = new DataView(control.buffer);
    cv.setBigUint64(0, BigInt(16 + fds.length * 4), true);
    cv.setInt32(8, SOL_SOCKET, true);
    cv.setInt32(12, SCM_RIGHTS, true);
    fds.forEach((fd, i) => cv.setInt32(16 + i * 4, fd, true));
  }
  const hdr = new Uint8Array(56);
  const hv = new DataView(hdr.buffer);
  hv.setBigUint64(16, _addr(iov), true);
  hv.setBigUint64(24, 1n, true);
  if (space > 0) {
    hv.setBigUint64(32, _addr(control), true);
    hv.setBigUint64(40, BigInt(space), true);
  }
  return { hdr, iov, data, control };
}

/** The descriptors an `SCM_RIGHTS` control message of a received {@link MsgHdr} carries. */
export function receivedFds(m: MsgHdr): number[] {
  const hv = new DataView(m.hdr.buffer);
  const len = Number(hv.getBigUint64(40, true));
  const cv = new DataView(m.control.buffer);
  const out: number[] = [];
  for (let off = 0; off + 16 <= len;) {
    const cl = Number(cv.getBigUint64(off, true));
    if (cl < 16) break;
    if (cv.getInt32(off + 8, true) === SOL_SOCKET && cv.getInt32(off + 12, true) === SCM_RIGHTS) {
      for (let i = 16; i + 4 <= cl; i += 4) out.push(cv.getInt32(off + i, true));
    }
    off += Math.ceil(cl / 8) * 8;
  }
  return out;
}

/** A `struct timeval` of `ms`. */
export function timeval(ms: number): Uint8Array<ArrayBuffer> {
  const t = new Uint8Array(16);
  const v = new DataView(t.buffer);
  v.setBigInt64(0, BigInt(Math.floor(ms / 1000)), true);
  v.setBigInt64(8, BigInt((ms % 1000) * 1000), true);
  return t;
}
