/**
 * The node a root-side {@link LibvirtHost} defines domains for: the node id in the node's `<data dir>/identity.json`,
 * read by the helper itself (the node never names its owner in a request). The file must be a plain file (never a
 * link root would follow); until it names a valid node id (the node has not joined) the owner is `undefined`, and it
 * is read again on the next call. Once found it is kept: a data dir's node id never changes.
 *
 * @module
 */
import { IDENTITY_FILE, IdentityFileError, readIdentity } from "../../core/journal/mod.ts";
import type { Logger } from "../../core/log/mod.ts";
import { NODE_ID } from "./domain_xml.ts";

/** A lazily read owner for `LibvirtHostOptions.owner`. */
export function identityOwner(dataDir: string, log?: Logger): () => Promise<string | undefined> {
  let found: string | undefined;
  return async () => {
    if (found !== undefined) return found;
    const path = `${dataDir}/${IDENTITY_FILE}`;
    try {
      if (!(await Deno.lstat(path)).isFile) {
        log?.warn({ path }, "libvirt-kvm: identity.json is not a plain file; no domain is this node's");
        return undefined;
      }
      const id = await readIdentity(dataDir);
      const node = id?.node_id;
      if (typeof node !== "string" || !NODE_ID.test(node)) return undefined;
      found = node;
      log?.info({ node_id: node }, "libvirt-kvm: domains are owned by this node");
      return node;
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return undefined;
      if (e instanceof IdentityFileError) {
        log?.warn({ err: e.message }, "libvirt-kvm: identity.json unreadable; no domain is this node's");
        return undefined;
      }
      throw e;
    }
  };
}
