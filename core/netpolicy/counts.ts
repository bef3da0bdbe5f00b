/**
 * What the integrity check compares: per table of bcd's ruleset, the rules of each chain and the elements of each
 * set. The renderer says what it loaded ({@link RuleCounts}); {@link countsOfNftJson} reads the same figures out of
 * `nft -j list table …`; {@link countDifferences} names every chain or set whose figure moved, and every table that
 * is gone, so a reload, `flush ruleset`, a flushed table, chain or set all show.
 *
 * @module
 */

/** bcd's three tables, as `<family> <name>`. */
export const NFT_TABLES = ["bridge bcd_instances", "inet bcd_taps", "arp bcd_taps"] as const;

/** One of {@link NFT_TABLES}. */
export type NftTable = typeof NFT_TABLES[number];

/** A table's figures: rules per chain, elements per set. */
export interface TableCounts {
  readonly chains: Readonly<Record<string, number>>;
  readonly sets: Readonly<Record<string, number>>;
}

/** Each table's figures; a table that is not loaded is absent. */
export type RuleCounts = Partial<Readonly<Record<NftTable, TableCounts>>>;

/** The largest `nft -j` listing read (1,000 instances with two NICs list in well under 2 MiB). */
export const MAX_LISTING_BYTES = 64 * 1024 * 1024;

/** A listing that is not `nft -j` output of one table. */
export class ListingMalformed extends Error {
  override name = "ListingMalformed";
}

function _obj(v: unknown): Record<string, unknown> | undefined {
  return typeof v === "object" && v !== null && !Array.isArray(v) ? v as Record<string, unknown> : undefined;
}

/**
 * The figures of `table` in `json`, the output of `nft -j list table <family> <name>`. Objects of other tables are
 * ignored. Throws {@link ListingMalformed} when the text is not such a listing or is over {@link MAX_LISTING_BYTES}.
 */
export function countsOfNftJson(table: NftTable, json: string): TableCounts {
  if (json.length > MAX_LISTING_BYTES) {
    throw new ListingMalformed(`nft listing of ${table} is over ${MAX_LISTING_BYTES} bytes`);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(json);
  } catch (e) {
    throw new ListingMalformed(`nft listing of ${table} is not JSON: ${(e as Error).message}`, { cause: e });
  }
  const items = _obj(doc)?.nftables;
  if (!Array.isArray(items)) throw new ListingMalformed(`nft listing of ${table} has no "nftables" array`);
  const [family, name] = table.split(" ") as [string, string];
  const chains: Record<string, number> = {};
  const sets: Record<string, number> = {};
  for (const item of items) {
    const o = _obj(item);
    const chain = _obj(o?.chain);
    const rule = _obj(o?.rule);
    const set = _obj(o?.set);
    const mine = (x: Record<string, unknown>) => x.family === family && x.table === name;
    if (chain && mine(chain) && typeof chain.name === "string") chains[chain.name] ??= 0;
    if (rule && mine(rule) && typeof rule.chain === "string") chains[rule.chain] = (chains[rule.chain] ?? 0) + 1;
    if (set && mine(set) && typeof set.name === "string") {
      sets[set.name] = Array.isArray(set.elem) ? set.elem.length : 0;
    }
  }
  return { chains, sets };
}

/** Every difference between what was loaded and what is there, one phrase each; empty when they agree. */
export function countDifferences(expected: RuleCounts, observed: RuleCounts): string[] {
  const out: string[] = [];
  for (const t of NFT_TABLES) {
    const e = expected[t];
    const o = observed[t];
    if (e === undefined) continue;
    if (o === undefined) {
      out.push(`table ${t} is gone`);
      continue;
    }
    for (const [kind, want, have] of [["chain", e.chains, o.chains], ["set", e.sets, o.sets]] as const) {
      for (const [k, n] of Object.entries(want)) {
        const got = have[k];
        if (got === undefined) out.push(`${t} ${kind} ${k} is gone`);
        else if (got !== n) {
          out.push(`${t} ${kind} ${k} holds ${got} ${kind === "chain" ? "rules" : "elements"}, ${n} loaded`);
        }
      }
      for (const k of Object.keys(have)) if (!(k in want)) out.push(`${t} has an extra ${kind} ${k}`);
    }
  }
  return out;
}
