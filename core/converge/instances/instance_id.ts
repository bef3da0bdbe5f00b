/**
 * The grammar of an instance id, apart from the domain plan (`domain_plan.ts` re-exports it), for the kinds that
 * check one at acceptance (`instance.snapshot`, `instance.migrate`) without loading the plan (issue 24).
 *
 * @module
 */

/** Instance ids a domain may carry: they name a directory and a domain. */
export const INSTANCE_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
