/**
 * One identity rebind try on `cloud-hypervisor` (000 §Identity rebind, steps 2–4), on the shared code of
 * `core/rebind` (the file, the 2-minute wait on the injected clock, the zeroing): the 1 MiB image is written to
 * `instances/<id>/rebind.raw` (0600, the node's), the VMM's user is granted `rw` on it by an ACL entry as a volume is
 * (`vmm_access.ts`), and it is hot-added with `vm.add-disk` as a `Raw` disk with id `vdz` (the device name it has on
 * `libvirt-kvm`) and serial `bc-rebind`. After the wait it is removed with `vm.remove-device`; a guest that has not
 * ejected it yet leaves it `detach-pending` (`ch_unplug.ts`: logged, the try's outcome is the answer's). Either way the
 * ACL entry is taken back and the file zeroed and deleted, so nothing of the secret stays on the host and the VMM's
 * user can open it no more. A try that finds the disk of an earlier one still held by the guest asks for its removal
 * again and fails `detach-pending` (a try, as any failed one) without adding a second.
 *
 * No path goes to root here: the node builds the path from the instance id, the file is created new by the node (never
 * through a link left in its place), and the VMM opens it as its own user, which reaches only what its ACL entries
 * and its unit's mounts give it (the instance directory is bound into the unit already). An instance that is not
 * running or paused is refused `not-running` (after the file was written; it is deleted all the same).
 *
 * @module
 */
import type { Clock } from "../../core/clock.ts";
import { DetachPending, type DomainState, RuntimeRefused } from "../../core/converge/instances/runtime.ts";
import type { Logger } from "../../core/log/mod.ts";
import { REBIND_SERIAL, REBIND_TARGET, rebindFileDisk, runRebind } from "../../core/rebind/mod.ts";
import { type ChApiClient, ChApiError } from "./api_client.ts";
import { unplugDevice } from "./ch_unplug.ts";
import type { VmmFileAccess } from "./vmm_access.ts";

/** The rebind disk's file name in the instance directory. */
export const CH_REBIND_FILE = "rebind.raw";

/** What one try needs of the runtime. */
export interface ChRebindContext {
  readonly id: string;
  readonly instanceDir: string;
  /** The VMM's user (the record's). */
  readonly uid: number;
  readonly api: ChApiClient;
  readonly access: VmmFileAccess;
  /** The instance's state now. */
  state(): Promise<DomainState>;
  readonly clock: Pick<Clock, "monotonic" | "sleep">;
  readonly log?: Logger;
}

/** One try: true when the guest answered with `nonce` (see the module doc). */
export function chRebind(c: ChRebindContext, image: Uint8Array, nonce: string): Promise<boolean> {
  const path = `${c.instanceDir}/${CH_REBIND_FILE}`;
  const disk = rebindFileDisk(path, 0o600, {
    attach: async () => {
      if ((await c.state()) === "stopped") {
        throw new RuntimeRefused("not-running", `${c.id} is not running; nothing to hot-plug into`);
      }
      // A guest that still holds the disk of an earlier try (its eject never came) is asked again; while it holds
      // it, no second disk of that id can be added.
      if ((await unplugDevice(c.api, REBIND_TARGET)) === "pending") {
        throw new DetachPending(`${c.id}: the guest still holds ${REBIND_TARGET} from an earlier try`);
      }
      await c.access.grantFile(path, c.uid, "rw");
      try {
        await c.api.addDisk({ id: REBIND_TARGET, path, image_type: "Raw", serial: REBIND_SERIAL });
      } catch (e) {
        if (e instanceof ChApiError) throw new RuntimeRefused("vmm-refused", `${c.id}: ${e.message}`, { cause: e });
        throw e;
      }
      c.log?.info({ instance: c.id }, "cloud-hypervisor: identity rebind disk attached");
    },
    detach: async () => {
      if ((await c.state()) === "stopped") return;
      if ((await unplugDevice(c.api, REBIND_TARGET)) === "pending") {
        throw new DetachPending(`${c.id}: the guest has not released ${REBIND_TARGET} yet`);
      }
      c.log?.info({ instance: c.id }, "cloud-hypervisor: identity rebind disk detached");
    },
    release: () => c.access.revokeFile(path, c.uid),
  });
  return runRebind(disk, image, nonce, { clock: c.clock, log: c.log, instance: c.id });
}
