/**
 * A host name's addresses for `site.httpProxy`'s guards: its A and AAAA records through Deno's resolver (the system's
 * configured name servers). A name without records of a type gives none of it; other resolver failures surface.
 *
 * @module
 */

/** The A and AAAA addresses of `name`. */
export async function resolveHost(name: string): Promise<string[]> {
  const out: string[] = [];
  for (const type of ["A", "AAAA"] as const) {
    try {
      out.push(...await Deno.resolveDns(name, type));
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
  }
  return out;
}
