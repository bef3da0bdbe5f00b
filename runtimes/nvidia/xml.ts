/**
 * A small, bounded XML parser for `nvidia-smi -q -x`. It builds an element tree and refuses what an XML bomb or an
 * external-entity trick needs: an internal DTD subset, `<!ENTITY`, any entity reference other than the five
 * predefined ones and numeric character references, and input past its size, depth and node limits. The one DOCTYPE
 * it accepts is the external declaration nvidia-smi writes (`<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">`),
 * which it never fetches.
 *
 * @module
 */

/** An element: its name, attributes, child elements and the text directly inside it. */
export interface XmlElement {
  readonly name: string;
  readonly attrs: Readonly<Record<string, string>>;
  readonly children: XmlElement[];
  text: string;
}

/** Why a document was refused. */
export type XmlRefusal = "too-large" | "too-deep" | "too-many-nodes" | "dtd" | "entity" | "malformed";

/** A document the parser will not read. */
export class XmlRefused extends Error {
  override name = "XmlRefused";
  constructor(readonly reason: XmlRefusal, message: string) {
    super(message);
  }
}

/** Parser limits. */
export interface XmlLimits {
  /** Characters of input (default 16 Mi). */
  readonly maxChars: number;
  /** Element nesting (default 64). */
  readonly maxDepth: number;
  /** Elements in all (default 500 000). */
  readonly maxNodes: number;
}

export const DEFAULT_XML_LIMITS: XmlLimits = { maxChars: 16 * 1024 * 1024, maxDepth: 64, maxNodes: 500_000 };

const _NAME = /[A-Za-z_][A-Za-z0-9_.:-]{0,127}/y;
const _WS = /[ \t\r\n]*/y;
const _PREDEFINED: Readonly<Record<string, string>> = { lt: "<", gt: ">", amp: "&", quot: '"', apos: "'" };

/** Parses `text` into its root element, or throws {@link XmlRefused}. */
export function parseXml(text: string, limits: XmlLimits = DEFAULT_XML_LIMITS): XmlElement {
  if (text.length > limits.maxChars) {
    throw new XmlRefused("too-large", `document of ${text.length} characters exceeds ${limits.maxChars}`);
  }
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  let nodes = 0;
  let sawDoctype = false;
  let root: XmlElement | undefined;
  const stack: XmlElement[] = [];

  const fail = (reason: XmlRefusal, what: string): never => {
    throw new XmlRefused(reason, `${what} at offset ${i}`);
  };
  const ws = () => {
    _WS.lastIndex = i;
    _WS.exec(text);
    i = _WS.lastIndex;
  };
  const name = (): string => {
    _NAME.lastIndex = i;
    const m = _NAME.exec(text);
    if (!m) fail("malformed", "expected a name");
    i = _NAME.lastIndex;
    return m![0];
  };
  const decode = (s: string): string => {
    if (!s.includes("&")) return s;
    return s.replace(/&([^;&\s]{0,16});?/g, (whole, ref: string) => {
      if (!whole.endsWith(";")) fail("entity", `unterminated entity reference ${JSON.stringify(whole)}`);
      if (ref in _PREDEFINED) return _PREDEFINED[ref]!;
      const m = /^#(?:x([0-9A-Fa-f]{1,6})|([0-9]{1,7}))$/.exec(ref);
      if (!m) return fail("entity", `entity reference &${ref}; is not allowed`);
      const cp = m[1] !== undefined ? parseInt(m[1], 16) : Number(m[2]);
      if (cp === 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) fail("entity", `character reference &${ref};`);
      return String.fromCodePoint(cp);
    });
  };
  const skipUntil = (end: string, what: string) => {
    const j = text.indexOf(end, i);
    if (j < 0) fail("malformed", `unterminated ${what}`);
    i = j + end.length;
  };

  while (i < text.length) {
    if (text[i] !== "<") {
      const j = text.indexOf("<", i);
      const chunk = text.slice(i, j < 0 ? text.length : j);
      const top = stack[stack.length - 1];
      if (top) top.text += decode(chunk);
      else if (chunk.trim() !== "") fail("malformed", "text outside the root element");
      i = j < 0 ? text.length : j;
      continue;
    }
    if (text.startsWith("<!--", i)) {
      i += 4;
      skipUntil("-->", "comment");
      continue;
    }
    if (text.startsWith("<?", i)) {
      i += 2;
      skipUntil("?>", "processing instruction");
      continue;
    }
    if (text.startsWith("<![CDATA[", i)) {
      const top = stack[stack.length - 1];
      if (!top) fail("malformed", "CDATA outside the root element");
      const start = i + 9;
      i = start;
      skipUntil("]]>", "CDATA section");
      top!.text += text.slice(start, i - 3);
      continue;
    }
    if (text.startsWith("<!DOCTYPE", i)) {
      if (sawDoctype || root || stack.length) fail("dtd", "DOCTYPE after the prolog");
      sawDoctype = true;
      const end = text.indexOf(">", i);
      if (end < 0) fail("malformed", "unterminated DOCTYPE");
      const decl = text.slice(i, end + 1);
      if (decl.includes("[")) fail("dtd", "an internal DTD subset is not allowed");
      if (
        !/^<!DOCTYPE[ \t\r\n]+[A-Za-z_][A-Za-z0-9_.:-]*(?:[ \t\r\n]+(?:SYSTEM[ \t\r\n]+"[^"<>]*"|PUBLIC[ \t\r\n]+"[^"<>]*"[ \t\r\n]+"[^"<>]*"))?[ \t\r\n]*>$/
          .test(decl)
      ) {
        fail("dtd", "only an external DOCTYPE declaration is allowed");
      }
      i = end + 1;
      continue;
    }
    if (text.startsWith("<!", i)) fail(text.startsWith("<!ENTITY", i) ? "entity" : "dtd", "markup declaration");
    if (text.startsWith("</", i)) {
      i += 2;
      const n = name();
      ws();
      if (text[i] !== ">") fail("malformed", "expected > after an end tag");
      i++;
      const top = stack.pop();
      if (!top || top.name !== n) fail("malformed", `end tag </${n}> does not match <${top?.name ?? ""}>`);
      continue;
    }
    // Start tag.
    i++;
    const n = name();
    const attrs: Record<string, string> = {};
    for (;;) {
      const before = i;
      ws();
      if (text[i] === ">" || text.startsWith("/>", i)) break;
      if (i === before) fail("malformed", "expected whitespace between attributes");
      const an = name();
      ws();
      if (text[i] !== "=") fail("malformed", "expected = after an attribute name");
      i++;
      ws();
      const q = text[i];
      if (q !== '"' && q !== "'") fail("malformed", "expected a quoted attribute value");
      const end = text.indexOf(q!, i + 1);
      if (end < 0) fail("malformed", "unterminated attribute value");
      const raw = text.slice(i + 1, end);
      if (raw.includes("<")) fail("malformed", "< in an attribute value");
      if (an in attrs) fail("malformed", `attribute ${an} twice`);
      attrs[an] = decode(raw);
      i = end + 1;
    }
    if (++nodes > limits.maxNodes) fail("too-many-nodes", `more than ${limits.maxNodes} elements`);
    const el: XmlElement = { name: n, attrs, children: [], text: "" };
    const parent = stack[stack.length - 1];
    if (parent) parent.children.push(el);
    else if (root) fail("malformed", "a second root element");
    else root = el;
    if (text.startsWith("/>", i)) {
      i += 2;
    } else {
      i++;
      stack.push(el);
      if (stack.length > limits.maxDepth) fail("too-deep", `nesting deeper than ${limits.maxDepth}`);
    }
  }
  if (stack.length) throw new XmlRefused("malformed", `unclosed element <${stack[stack.length - 1]!.name}>`);
  if (!root) throw new XmlRefused("malformed", "no root element");
  return root;
}

/** The first child element named `name`. */
export function child(el: XmlElement | undefined, name: string): XmlElement | undefined {
  return el?.children.find((c) => c.name === name);
}

/** Every child element named `name`. */
export function childrenNamed(el: XmlElement | undefined, name: string): XmlElement[] {
  return el ? el.children.filter((c) => c.name === name) : [];
}

/** The trimmed text at a `/`-separated path below `el`, or `undefined` when an element on the path is missing. */
export function textAt(el: XmlElement | undefined, path: string): string | undefined {
  let cur = el;
  for (const part of path.split("/")) cur = child(cur, part);
  return cur?.text.trim();
}
