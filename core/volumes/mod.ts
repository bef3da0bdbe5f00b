/**
 * Persistent volumes (000 §Persistent volumes): the disks behind sandbox volumes, kept by a host across the instances
 * that attach them.
 *
 * - `grammar.ts`: ids, serials, sizes; attachments as `vdb` onward ({@link attachmentDev}).
 * - `store.ts`: the {@link VolumeStore} port (sparse raw files; the real one is `runtimes/volumes/file_store.ts`) and
 *   its in-memory fake; `store_contract_testing.ts` is the contract both keep.
 * - `space.ts`: the space rule with the seed's refusal message, and `StatusReport.volume_storage`.
 * - `open_volumes.ts`: one writer, the tracker of which instances hold which volumes open.
 * - `keeper.ts`: a pass's volume work: create and grow before any define, destroy the unlisted after.
 *
 * The `instances` converger drives it (`core/converge/instances/volume_step.ts`); the runtimes attach volumes by serial
 * (`libvirt-kvm`: raw virtio disks in the domain XML at define and hot-plugged live through the helper).
 *
 * Restored placeholders of the seed's export (DESIGN.md, "stripped placeholders"): the store's `/volumes/.raw` and
 * `.json` are `<data dir>/volumes/<id>.raw` and `<data dir>/volumes/<id>.json`; the refusal's `volume : …` is
 * `volume <id>: …`; the guest's `/dev/disk/by-id/virtio-` is `/dev/disk/by-id/virtio-<serial>`.
 *
 * Judgement calls: a volume refused for its spec (a bad field, a shrink) is kept, never destroyed, while the section
 * names it; a space refusal makes its instances wait (`PROGRESSING`: space may free), the others fail them; a growth
 * that does not fit leaves the volume at its size and its instances waiting, running ones untouched.
 *
 * @module
 */
export {
  attachmentDev,
  byIdPath,
  VOLUME_ID,
  VOLUME_SERIAL,
  type VolumeAttachment,
  type VolumeSpec,
} from "./grammar.ts";
export { VOLUME_REASONS, VolumeKeeper, type VolumeRefusal, type VolumeVerdicts } from "./keeper.ts";
export { OpenVolumes, VOLUME_BUSY } from "./open_volumes.ts";
export { spaceRefusal, type VolumeStorage, volumeStorage } from "./space.ts";
export { MemoryVolumeStore, type StoredVolume, VolumeRefused, type VolumeStore } from "./store.ts";
