/**
 * The helper's plugin source on a host: `[plugins] dir`, each plugin started as `[plugins] user` (a name in
 * `/etc/passwd` or a uid) with that user's primary group and no other, never as root. The user is looked up on each
 * launch, so a user added after the helper started is found; one that does not resolve, or resolves to uid or gid 0,
 * fails the launch (`plugin-crashed`, naming the user) and runs nothing.
 *
 * @module
 */
import {
  DirPluginSource,
  type PluginChannel,
  PluginError,
  type PluginManifest,
  type PluginSource,
} from "../../core/plugins/mod.ts";

/** Options of {@link UserPluginSource}. */
export interface UserPluginSourceOptions {
  readonly dir: string;
  readonly user: string;
  /** Default `/etc/passwd`. */
  readonly passwd?: string;
}

/** The uid and primary gid of `user` (a name or a numeric uid) from `passwd`. */
export async function passwdIdentity(user: string, passwd = "/etc/passwd"): Promise<{ uid: number; gid: number }> {
  const text = await Deno.readTextFile(passwd);
  for (const line of text.split("\n")) {
    const [name, , uid, gid] = line.split(":");
    if (uid === undefined || gid === undefined || !/^\d{1,10}$/.test(uid) || !/^\d{1,10}$/.test(gid)) continue;
    if (name === user || uid === user) return { uid: Number(uid), gid: Number(gid) };
  }
  throw new RangeError(`user ${JSON.stringify(user)} is not in ${passwd}`);
}

/** {@link DirPluginSource} under the configured user. */
export class UserPluginSource implements PluginSource {
  readonly #o: UserPluginSourceOptions;
  readonly #plain: DirPluginSource;
  constructor(opts: UserPluginSourceOptions) {
    this.#o = opts;
    this.#plain = new DirPluginSource({ dir: opts.dir });
  }
  manifest(name: string): Promise<PluginManifest> {
    return this.#plain.manifest(name);
  }
  list(): Promise<PluginManifest[]> {
    return this.#plain.list();
  }
  async launch(m: PluginManifest): Promise<PluginChannel> {
    let identity;
    try {
      identity = await passwdIdentity(this.#o.user, this.#o.passwd);
      if (identity.uid === 0 || identity.gid === 0) throw new RangeError(`user ${this.#o.user} is root`);
    } catch (e) {
      if (!(e instanceof RangeError || e instanceof Deno.errors.NotFound)) throw e;
      throw new PluginError("plugin-crashed", `plugin ${m.name} cannot start: [plugins] user: ${e.message}`, {
        cause: e,
      });
    }
    return await new DirPluginSource({ dir: this.#o.dir, identity }).launch(m);
  }
}
