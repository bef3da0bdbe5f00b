/**
 * The bundle schema the host checks before every push (seed 004 §(f), OQ-1b (ii): schema on the host, safety in the
 * guest): the Runner's `bundleSchema` as an images {@link Check}. The seed names the schema's parts (a top-level
 * allow-list, the member grammar, the JSON/YAML shape) but not their contents, so this grammar is bcd's:
 *
 * - top level: the files `agent.yaml`, `agent.json`, `settings.json`, and the directories `skills/`, `prompts/`,
 *   `mcp/`, `hooks/` with anything (within the grammar) below them; `./` itself;
 * - every path component matches `^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$` (no leading dot or dash, no spaces);
 * - a `.json` file is one JSON object; a `.yaml`/`.yml` file is UTF-8 text without NUL whose first line is not a
 *   tab-indented one (YAML forbids tabs for indentation); `.md` and every other file UTF-8 text without NUL.
 *
 * Refusals are {@link BundleSchemaError} naming the member.
 *
 * @module
 */
import type { Check, MemberType } from "../images/mod.ts";

/** The bundle breaks the schema; `member` names where. */
export class BundleSchemaError extends Error {
  override name = "BundleSchemaError";
  constructor(readonly member: string, message: string) {
    super(`bundle schema: ${member}: ${message}`);
  }
}

/** Top-level regular files allowed. */
export const TOP_FILES: ReadonlySet<string> = new Set(["agent.yaml", "agent.json", "settings.json"]);
/** Top-level directories allowed. */
export const TOP_DIRS: ReadonlySet<string> = new Set(["skills", "prompts", "mcp", "hooks"]);
const COMPONENT = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;
const utf8 = new TextDecoder("utf-8", { fatal: true });

function _text(member: string, content: Uint8Array): string {
  let text: string;
  try {
    text = utf8.decode(content);
  } catch (e) {
    if (!(e instanceof TypeError)) throw e;
    throw new BundleSchemaError(member, "is not UTF-8 text");
  }
  if (text.includes("\0")) throw new BundleSchemaError(member, "holds a NUL byte");
  return text;
}

/** The schema as a {@link Check}. */
export const BUNDLE_SCHEMA: Check = {
  member(clean: string, typeflag: MemberType): void {
    if (clean === "" || clean === ".") return;
    const parts = clean.replace(/\/$/, "").split("/");
    for (const p of parts) {
      if (!COMPONENT.test(p)) throw new BundleSchemaError(clean, `component "${p.slice(0, 64)}" breaks the grammar`);
    }
    const top = parts[0]!;
    if (parts.length === 1 && typeflag === "0") {
      if (!TOP_FILES.has(top)) throw new BundleSchemaError(clean, `no top-level file of that name is allowed`);
      return;
    }
    if (!TOP_DIRS.has(top)) throw new BundleSchemaError(clean, `top-level directory "${top}" is not allowed`);
  },
  content(clean: string, content: Uint8Array): void {
    const text = _text(clean, content);
    if (clean.endsWith(".json")) {
      let v: unknown;
      try {
        v = JSON.parse(text);
      } catch (e) {
        if (!(e instanceof SyntaxError)) throw e;
        throw new BundleSchemaError(clean, `is not JSON (${e.message.slice(0, 80)})`);
      }
      if (typeof v !== "object" || v === null || Array.isArray(v)) {
        throw new BundleSchemaError(clean, "must hold one JSON object");
      }
    } else if (/\.ya?ml$/.test(clean) && /^\t/m.test(text)) {
      throw new BundleSchemaError(clean, "indents with a tab, which YAML forbids");
    }
  },
};
