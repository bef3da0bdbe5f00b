import assert from "node:assert/strict";
import { parseXml, textAt, XmlRefused } from "./xml.ts";

const refused = (text: string, reason: string, limits?: Parameters<typeof parseXml>[1]) =>
  assert.throws(() => parseXml(text, limits), (e) => e instanceof XmlRefused && e.reason === reason, text.slice(0, 80));

Deno.test("parseXml reads elements, attributes, entities, CDATA and nvidia-smi's external DOCTYPE", () => {
  const root = parseXml(
    '\ufeff<?xml version="1.0" ?>\n<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">\n<!-- c -->' +
      `<nvidia_smi_log><gpu id='00000000:18:00.0'><product_name>A &amp; B &lt;&#65;&#x42;&gt;</product_name>` +
      "<empty/><x><![CDATA[<raw>]]></x></gpu></nvidia_smi_log>\n<!-- trailing -->\n",
  );
  assert.equal(root.name, "nvidia_smi_log");
  assert.equal(root.children[0]!.attrs["id"], "00000000:18:00.0");
  assert.equal(textAt(root, "gpu/product_name"), "A & B <AB>");
  assert.equal(textAt(root, "gpu/empty"), "");
  assert.equal(textAt(root, "gpu/x"), "<raw>");
  assert.equal(textAt(root, "gpu/missing"), undefined);
});

Deno.test("parseXml refuses DTD and entity tricks", async (t) => {
  const rows: [string, string, string][] = [
    ["an internal DTD subset", "<!DOCTYPE a [<!ELEMENT a ANY>]><a/>", "dtd"],
    [
      "the billion laughs",
      '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;">]><lolz>&lol2;</lolz>',
      "dtd",
    ],
    ["an external entity", '<!DOCTYPE a [<!ENTITY x SYSTEM "file:///etc/passwd">]><a>&x;</a>', "dtd"],
    ["an ENTITY declaration outside a DOCTYPE", '<!ENTITY x "y"><a/>', "entity"],
    ["a reference to an undeclared entity", "<a>&x;</a>", "entity"],
    ["a reference in an attribute", '<a b="&ext;"/>', "entity"],
    ["a bare ampersand", "<a>A & B</a>", "entity"],
    ["a NUL character reference", "<a>&#0;</a>", "entity"],
    ["a DOCTYPE after the root", '<a/><!DOCTYPE a SYSTEM "x">', "dtd"],
    ["a second DOCTYPE", '<!DOCTYPE a SYSTEM "x"><!DOCTYPE a SYSTEM "y"><a/>', "dtd"],
    ["an ELEMENT declaration", "<!ELEMENT a ANY><a/>", "dtd"],
  ];
  for (const [name, text, reason] of rows) await t.step(name, () => refused(text, reason));
});

Deno.test("parseXml bounds size, depth and node count before it builds more", () => {
  refused("<a>" + "x".repeat(100) + "</a>", "too-large", { maxChars: 50, maxDepth: 64, maxNodes: 100 });
  refused("<a>".repeat(70) + "</a>".repeat(70), "too-deep", { maxChars: 1e6, maxDepth: 64, maxNodes: 1000 });
  refused("<a>" + "<b/>".repeat(1001) + "</a>", "too-many-nodes", { maxChars: 1e6, maxDepth: 64, maxNodes: 1000 });
});

Deno.test("parseXml refuses malformed documents", () => {
  for (
    const text of [
      "",
      "text",
      "<a>",
      "<a></b>",
      "<a/><b/>",
      "<a b=c/>",
      '<a b="1" b="2"/>',
      '<a b="<"/>',
      "<a><!-- open </a>",
      "<a>x</a>tail",
      "<1a/>",
    ]
  ) {
    refused(text, "malformed");
  }
});
