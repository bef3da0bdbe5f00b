/**
 * Command-line option parsing without `node:util`: `node:util`'s `parseArgs` grammar and error messages, for the
 * agents' command lines (issue 24: importing `node:util` initialises Deno's Node layer, ~10 ms of every start).
 *
 * The grammar is Node's: `--name value` and `--name=value` for a string option, `--name` for a boolean one, `-n value`,
 * `-nvalue` and boolean groups `-abc` by `short`, `--` ends the options (the rest are positionals), `-` alone is a
 * positional; `multiple` collects every value in an array. In strict mode (the default) an unknown option, a string
 * option without a value or with an option-like one (`--out --fast`; `--out=--fast` is meant), a value given to a
 * boolean, and a positional where none are allowed are refused with Node's messages (`args_test.ts` compares the
 * results and the errors with `node:util`'s on a table). Defaults, tokens and negative options are not supported: no
 * bcd command line uses them.
 *
 * @module
 */

/** One option: its value type, an optional one-character alias, and whether it may repeat. */
export interface OptionSpec {
  readonly type: "string" | "boolean";
  readonly short?: string;
  readonly multiple?: boolean;
}

/** The options of a command line, by long name. */
export type Options = Readonly<Record<string, OptionSpec>>;

/** What to parse, as `node:util`'s `parseArgs` takes it (without `default`, `tokens` and `allowNegative`). */
export interface ParseConfig {
  readonly args: readonly string[];
  readonly options?: Options;
  /** Refuse unknown options, missing or misplaced values and unexpected positionals; default true. */
  readonly strict?: boolean;
  /** Default: `!strict`. */
  readonly allowPositionals?: boolean;
}

/** The parse: option values by long name (in the order first seen) and the positionals. */
export interface Parsed {
  values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  positionals: string[];
}

/** A refused command line; `code` is `node:util`'s error code for it. */
export class ArgsError extends TypeError {
  override name = "TypeError";
  constructor(
    readonly code:
      | "ERR_PARSE_ARGS_UNKNOWN_OPTION"
      | "ERR_PARSE_ARGS_INVALID_OPTION_VALUE"
      | "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL",
    message: string,
  ) {
    super(message);
  }
}

interface _Token {
  readonly name: string;
  readonly rawName: string;
  readonly value: string | undefined;
  readonly inlineValue: boolean;
}

function _own(options: Options, name: string): OptionSpec | undefined {
  return Object.hasOwn(options, name) ? options[name] : undefined;
}

function _longFor(short: string, options: Options): string {
  for (const [name, o] of Object.entries(options)) if (o.short === short) return name;
  return short;
}

function _isString(options: Options, name: string): boolean {
  return _own(options, name)?.type === "string";
}

/** Parses `config.args` as `node:util`'s `parseArgs` does (see the module doc); throws {@link ArgsError}. */
export function parseArgs(config: ParseConfig): Parsed {
  const options: Options = config.options ?? {};
  const strict = config.strict ?? true;
  const allowPositionals = config.allowPositionals ?? !strict;
  for (const [name, o] of Object.entries(options)) {
    if (o.short !== undefined && o.short.length !== 1) {
      throw new TypeError(`option "${name}": short must be a single character, got ${JSON.stringify(o.short)}`);
    }
  }
  const values: Parsed["values"] = Object.create(null);
  const positionals: string[] = [];
  const store = (t: _Token) => {
    if (strict) _check(t, options, allowPositionals);
    if (t.name === "__proto__") return;
    const v = t.value ?? true;
    if (_own(options, t.name)?.multiple) {
      const prev = values[t.name];
      if (Array.isArray(prev)) prev.push(v);
      else values[t.name] = [v];
    } else {
      values[t.name] = v;
    }
  };
  const positional = (value: string) => {
    if (!allowPositionals) {
      throw new ArgsError(
        "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL",
        `Unexpected argument '${value}'. This command does not take positional arguments`,
      );
    }
    positionals.push(value);
  };
  const rest = [...config.args];
  while (rest.length > 0) {
    const arg = rest.shift()!;
    if (arg === "--") {
      for (const a of rest) positional(a);
      break;
    }
    const isShort = arg.length >= 2 && arg[0] === "-" && arg[1] !== "-";
    if (isShort && arg.length === 2) {
      // -f, -f value
      const name = _longFor(arg[1]!, options);
      const value = _isString(options, name) && rest.length > 0 ? rest.shift() : undefined;
      store({ name, rawName: arg, value, inlineValue: false });
      continue;
    }
    if (isShort) {
      const name = _longFor(arg[1]!, options);
      if (_isString(options, name)) {
        // -fVALUE
        store({ name, rawName: `-${arg[1]}`, value: arg.slice(2), inlineValue: true });
        continue;
      }
      // -abc: -a -b -c; a string option inside the group takes the rest as its value (-abfFILE: -a -b -fFILE)
      const expanded: string[] = [];
      for (let i = 1; i < arg.length; i++) {
        const s = arg[i]!;
        if (!_isString(options, _longFor(s, options)) || i === arg.length - 1) {
          expanded.push(`-${s}`);
        } else {
          expanded.push(`-${arg.slice(i)}`);
          break;
        }
      }
      rest.unshift(...expanded);
      continue;
    }
    if (arg.length > 2 && arg.startsWith("--")) {
      const eq = arg.indexOf("=", 3);
      if (eq === -1) {
        // --name, --name value
        const name = arg.slice(2);
        const value = _isString(options, name) && rest.length > 0 ? rest.shift() : undefined;
        store({ name, rawName: arg, value, inlineValue: false });
      } else {
        // --name=value
        const name = arg.slice(2, eq);
        store({ name, rawName: `--${name}`, value: arg.slice(eq + 1), inlineValue: true });
      }
      continue;
    }
    positional(arg);
  }
  return { values, positionals };
}

function _check(t: _Token, options: Options, allowPositionals: boolean): void {
  const o = _own(options, t.name);
  if (o === undefined) {
    const hint = allowPositionals
      ? `. To specify a positional argument starting with a '-', place it at the end of the command after '--', ` +
        `as in '-- ${JSON.stringify(t.rawName)}`
      : "";
    throw new ArgsError("ERR_PARSE_ARGS_UNKNOWN_OPTION", `Unknown option '${t.rawName}'${hint}`);
  }
  const shortAndLong = `${o.short ? `-${o.short}, ` : ""}--${t.name}`;
  if (o.type === "string" && typeof t.value !== "string") {
    throw new ArgsError("ERR_PARSE_ARGS_INVALID_OPTION_VALUE", `Option '${shortAndLong} <value>' argument missing`);
  }
  if (o.type === "boolean" && t.value !== undefined) {
    throw new ArgsError("ERR_PARSE_ARGS_INVALID_OPTION_VALUE", `Option '${shortAndLong}' does not take an argument`);
  }
  if (!t.inlineValue && t.value !== undefined && t.value.length > 1 && t.value[0] === "-") {
    const example = t.rawName.startsWith("--") ? `'${t.rawName}=-XYZ'` : `'--${t.name}=-XYZ' or '${t.rawName}-XYZ'`;
    throw new ArgsError(
      "ERR_PARSE_ARGS_INVALID_OPTION_VALUE",
      `Option '${t.rawName}' argument is ambiguous.\nDid you forget to specify the option argument for ` +
        `'${t.rawName}'?\nTo specify an option argument starting with a dash use ${example}.`,
    );
  }
}
