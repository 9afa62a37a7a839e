/** Bad arguments: the message and the usage on standard error, status 2. */
export class UsageError extends Error {}
/** A well-formed command that the data refuses: the reason alone, status 2, nothing changed. */
export class RefusedError extends Error {}
