/**
 * Whether a process is a kernel thread, from its `/proc/PID/stat` line: the flags (field 9) hold `PF_KTHREAD`
 * (0x00200000). The root cgroup lists kernel threads among its processes, and cgroup2 refuses to move them (EINVAL),
 * so the bootstrap of a layered root moves every process of the parent but those.
 *
 * @module
 */

/** The kernel's flag of a kernel thread. */
export const PF_KTHREAD = 0x00200000;

/** Whether the stat line is a kernel thread's; throws on a line that is not a stat line. */
export function isKernelThreadStat(text: string): boolean {
  const close = text.lastIndexOf(")");
  const flags = close < 0 ? undefined : text.slice(close + 2).trim().split(" ")[9 - 3];
  if (flags === undefined || !/^\d+$/.test(flags)) {
    throw new RangeError(`malformed /proc stat line: ${JSON.stringify(text.slice(0, 80))}`);
  }
  return (Number(flags) & PF_KTHREAD) !== 0;
}

/** Whether `pid` is a kernel thread; false once it is gone. */
export async function isKernelThread(pid: string, procDir = "/proc"): Promise<boolean> {
  try {
    return isKernelThreadStat(await Deno.readTextFile(`${procDir}/${pid}/stat`));
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}
