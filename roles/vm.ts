/**
 * `bcd-vm`'s entry point (`deno task vm`): wiring only; see `vm_cli.ts`.
 *
 * @module
 */
import { vmMain } from "./vm_cli.ts";

if (import.meta.main) Deno.exit(await vmMain(Deno.args));
