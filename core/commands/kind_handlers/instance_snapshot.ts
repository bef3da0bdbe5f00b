/**
 * `instance.snapshot` (bulk lane, not retry-safe; 000 §Kinds by lane, §Instances): the instance's runtime writes the
 * snapshot (its disk and, with `include_memory`, its memory state) into a staging file under `data_dir/snapshots`,
 * hashed with SHA-256 as it is written, and this handler uploads that file with HTTP PUT to the payload's presigned
 * https URL under the transfer rules (redirects only to https; a 2-minute window moving less than 1 MiB, or 6 hours in
 * all, ends it), then removes the staging file, whatever the outcome. Result: `InstanceSnapshotResult` (digest, size,
 * runtime, `include_memory`, the CPU model a memory snapshot restores on).
 *
 * Failure codes: `invalid-payload` (no instance id, an upload URL that is not https), `snapshot-refused` (the
 * runtime's refusal, with the seed's message: passthrough GPUs or a read-write volume with memory), `no-instance`
 * (no runtime holds the instance), and the upload's (`upload-refused`, `upload-stalled`, `upload-timeout`,
 * `upload-failed`). The lock is `instance:<id>`, so two snapshots of one instance never overlap.
 *
 * @module
 */
import { packResult, unpackPayload, WireDecodeError } from "../../../proto/mod.ts";
import type { HandlerContext, HandlerResult, KindHandler } from "../handlers.ts";
import { CommandFailed, InvalidPayload } from "../rejection.ts";
import { checkUploadUrl, UploadError } from "./logs_collect.ts";
import { INSTANCE_ID } from "../../converge/instances/instance_id.ts";

/** A snapshot written to its staging file. */
export interface StagedSnapshot {
  readonly path: string;
  readonly size: number;
  readonly sha256: string;
  readonly runtime: string;
  readonly includeMemory: boolean;
  /** The host CPU model (a memory snapshot restores only on it); empty when unknown. */
  readonly cpuModel: string;
}

/** A snapshot the runtime will not take, with the seed's message; `code` becomes the command's error code. */
export class SnapshotRefused extends Error {
  override name = "SnapshotRefused";
  constructor(readonly code: "snapshot-refused" | "no-instance", message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** What the handler needs of the instance runtimes. */
export interface InstanceSnapshotter {
  /**
   * Writes the snapshot of `instanceId` to a new staging file named for `tag` (the command id) and returns it; the
   * instance carries on as it was. Throws {@link SnapshotRefused} for a refusal.
   */
  take(instanceId: string, includeMemory: boolean, tag: string, signal: AbortSignal): Promise<StagedSnapshot>;
  /** Removes a staging file {@link take} wrote. */
  discard(staged: StagedSnapshot): Promise<void>;
}

/** PUTs a file to a presigned URL under the transfer rules; rejects with {@link UploadError}. */
export interface FileUploader {
  putFile(url: string, path: string, opts: { contentType: string; signal?: AbortSignal }): Promise<void>;
}

/** The `instance.snapshot` handler; `snapshotter` is looked up per command (the runtime may come up after wiring). */
export function instanceSnapshotHandler(ports: {
  snapshotter: () => InstanceSnapshotter | undefined;
  uploader: FileUploader;
}): KindHandler {
  return {
    kind: "instance.snapshot",
    resources(command) {
      const p = _payload(command.payload);
      checkUploadUrl(p.upload_url);
      return [`instance:${p.instance_id}`];
    },
    async run(ctx: HandlerContext): Promise<HandlerResult> {
      const p = _payload(ctx.command.payload);
      const url = checkUploadUrl(p.upload_url);
      const s = ports.snapshotter();
      if (!s) throw new CommandFailed("no-instance", "this host runs no instance runtime that takes snapshots");
      let staged: StagedSnapshot;
      try {
        staged = await s.take(p.instance_id, p.include_memory, ctx.command.id, ctx.signal);
      } catch (e) {
        if (e instanceof SnapshotRefused) throw new CommandFailed(e.code, e.message, { cause: e });
        throw e;
      }
      try {
        await ports.uploader.putFile(url.href, staged.path, { contentType: "application/x-tar", signal: ctx.signal });
      } catch (e) {
        if (e instanceof UploadError) throw new CommandFailed(e.code, e.message, { cause: e });
        throw e;
      } finally {
        await s.discard(staged);
      }
      const any = packResult("instance.snapshot", {
        sha256: staged.sha256,
        size_bytes: staged.size,
        runtime: staged.runtime,
        include_memory: staged.includeMemory,
        cpu_model: staged.cpuModel,
      });
      return { result: { typeUrl: any.type_url, value: any.value } };
    },
  };
}

function _payload(p: { typeUrl: string; value: Uint8Array } | undefined) {
  if (p === undefined) throw new InvalidPayload("instance.snapshot needs a payload with instance_id and upload_url");
  let v;
  try {
    v = unpackPayload("instance.snapshot", { type_url: p.typeUrl, value: p.value });
  } catch (e) {
    if (e instanceof WireDecodeError) throw new InvalidPayload(e.message, { cause: e });
    throw e;
  }
  if (!INSTANCE_ID.test(v.instance_id)) {
    throw new InvalidPayload(`instance_id ${JSON.stringify(v.instance_id)} is not an instance id`);
  }
  return v;
}
