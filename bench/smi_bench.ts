/**
 * `deno task bench:nvidia`: reading the 8-GPU HGX `nvidia-smi -q -x` (58 KiB) against the anchor `JSON.parse` of
 * the same inventory as JSON, in the same run (`deno bench` prints the ratio to the baseline).
 */
import { parseSmiList, withMigUuids } from "../runtimes/nvidia/smi_list.ts";
import { parseSmiXml } from "../runtimes/nvidia/smi_xml.ts";
import { parseXml } from "../runtimes/nvidia/xml.ts";

const dir = new URL("../fixtures/nvidia/", import.meta.url);
const xml = Deno.readTextFileSync(new URL("hgx8_mig2.xml", dir));
const list = Deno.readTextFileSync(new URL("hgx8_mig2.list.txt", dir));
const json = JSON.stringify(parseXml(xml));

Deno.bench({
  name: "anchor: JSON.parse of the same tree as JSON",
  group: "hgx",
  baseline: true,
  fn: () => void JSON.parse(json),
});
Deno.bench({ name: "parseXml (tree only)", group: "hgx", fn: () => void parseXml(xml) });
Deno.bench({
  name: "parseSmiXml + -L (inventory)",
  group: "hgx",
  fn: () => void withMigUuids(parseSmiXml(xml), parseSmiList(list)),
});
