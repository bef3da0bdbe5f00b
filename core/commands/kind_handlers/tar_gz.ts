/**
 * A minimal ustar writer with gzip (CompressionStream): regular files only, names checked, for the `logs.collect`
 * archive. GNU tar reads what it writes (tested with the real `tar`).
 *
 * @module
 */

import { tar, type TarEntry } from "../../images/ustar_writer.ts";

export { tar, type TarEntry };

/** gzip of `bytes`. */
export async function gzip(bytes: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([bytes as Uint8Array<ArrayBuffer>]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** The `.tar.gz` of `entries`. */
export async function tarGz(entries: readonly TarEntry[]): Promise<Uint8Array> {
  return await gzip(tar(entries));
}
