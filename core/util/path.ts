/**
 * POSIX path joining without `node:path`: an agent's start path touches no Node compatibility module but
 * `node:sqlite` (issue 24: the first `node:` import initialises Deno's Node layer, ~7 ms of every start). These give
 * exactly `node:path`'s POSIX results (`path_test.ts` compares them on a table and on generated paths).
 *
 * @module
 */

/** `path.posix.normalize`: resolves `.` and `..` segments and repeated slashes; `"."` (or `"./"`) for an empty result. */
export function normalize(path: string): string {
  if (path.length === 0) return ".";
  const absolute = path.charCodeAt(0) === 47;
  const trailing = path.charCodeAt(path.length - 1) === 47;
  const out: string[] = [];
  for (const seg of path.split("/")) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") {
      if (out.length > 0 && out[out.length - 1] !== "..") out.pop();
      else if (!absolute) out.push("..");
      continue;
    }
    out.push(seg);
  }
  let s = out.join("/");
  if (s.length === 0) return absolute ? "/" : trailing ? "./" : ".";
  if (trailing) s += "/";
  return absolute ? `/${s}` : s;
}

/** `path.posix.join`: the non-empty parts joined with `/`, then {@link normalize}d; `"."` when all are empty. */
export function join(...parts: string[]): string {
  const nonEmpty = parts.filter((p) => p.length > 0);
  return nonEmpty.length === 0 ? "." : normalize(nonEmpty.join("/"));
}

/**
 * `path.posix.dirname`: the path up to the slash before its last segment (trailing slashes ignored; slashes before
 * that one are kept, as Node keeps them); `"/"` or `"."` at the top, and `"//"` for `//x`.
 */
export function dirname(path: string): string {
  if (path.length === 0) return ".";
  const absolute = path.charCodeAt(0) === 47;
  let end = -1;
  let matchedSlash = true;
  for (let i = path.length - 1; i >= 1; --i) {
    if (path.charCodeAt(i) === 47) {
      if (!matchedSlash) {
        end = i;
        break;
      }
    } else {
      matchedSlash = false;
    }
  }
  if (end === -1) return absolute ? "/" : ".";
  if (absolute && end === 1) return "//";
  return path.slice(0, end);
}

/** `path.posix.basename` without a suffix: the last segment, trailing slashes ignored. */
export function basename(path: string): string {
  let end = path.length;
  while (end > 0 && path.charCodeAt(end - 1) === 47) end--;
  if (end === 0) return "";
  return path.slice(path.lastIndexOf("/", end - 1) + 1, end);
}

/**
 * `node:url`'s `fileURLToPath` on POSIX: the decoded path of a `file:` URL; `TypeError` for another scheme, a host
 * other than `localhost`, or an encoded `/` (Node's refusals).
 */
export function fromFileUrl(url: URL | string): string {
  const u = typeof url === "string" ? new URL(url) : url;
  if (u.protocol !== "file:") throw new TypeError(`The URL must be of scheme file: ${u.href}`);
  if (u.hostname !== "" && u.hostname !== "localhost") {
    throw new TypeError(`File URL host must be "localhost" or empty on linux: ${u.href}`);
  }
  if (/%2f/i.test(u.pathname)) throw new TypeError(`File URL path must not include encoded / characters: ${u.href}`);
  return decodeURIComponent(u.pathname);
}
