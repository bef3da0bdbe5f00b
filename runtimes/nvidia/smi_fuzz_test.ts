/**
 * Bounded mutation fuzzing of the `nvidia-smi -q -x` reader: seeded mutations of a real-shaped document either read
 * as an inventory or are refused with a typed error (`XmlRefused`, `SmiOutputError`), never anything else.
 */
import assert from "node:assert/strict";
import { parseSmiXml, SmiOutputError } from "./smi_xml.ts";
import { XmlRefused } from "./xml.ts";

const BASE = Deno.readTextFileSync(new URL("../../fixtures/nvidia/single.xml", import.meta.url));
const INSERTS = [
  "<",
  ">",
  "&",
  "&amp;",
  "&#0;",
  "&#x110000;",
  "&lol;",
  "<!ENTITY x 'y'>",
  "<!DOCTYPE a [",
  "]]>",
  "<![CDATA[",
  "<!--",
  "-->",
  "</gpu>",
  "<gpu>",
  '"',
  "'",
  "\u0000",
  "<uuid>GPU-x</uuid>",
  "<mig_device><index>x</index></mig_device>",
];

function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

Deno.test("parseSmiXml: 3000 seeded mutations read or are refused with a typed error", () => {
  const r = rng(0x5eed);
  let read = 0;
  let refused = 0;
  for (let i = 0; i < 3000; i++) {
    let doc = BASE;
    for (let k = 1 + Math.floor(r() * 3); k > 0; k--) {
      const at = Math.floor(r() * doc.length);
      const op = Math.floor(r() * 4);
      if (op === 0) doc = doc.slice(0, at) + doc.slice(at + 1 + Math.floor(r() * 40));
      else if (op === 1) doc = doc.slice(0, at) + INSERTS[Math.floor(r() * INSERTS.length)]! + doc.slice(at);
      else if (op === 2) doc = doc.slice(0, at);
      else doc = doc.slice(0, at) + String.fromCharCode(Math.floor(r() * 128)) + doc.slice(at + 1);
    }
    try {
      parseSmiXml(doc);
      read++;
    } catch (e) {
      if (!(e instanceof XmlRefused || e instanceof SmiOutputError)) {
        throw new Error(`mutation ${i} threw ${(e as Error).name}: ${(e as Error).message}`, { cause: e });
      }
      refused++;
    }
  }
  assert.equal(read + refused, 3000);
  assert.ok(read > 0 && refused > 0, `read ${read}, refused ${refused}`);
});
