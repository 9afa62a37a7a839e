import { z } from 'zod';

/**
 * How the configuration is declared: each setting once, as the environment variable it comes
 * from (or the variables it is derived from), so that the `Config` type, the reading of the
 * environment and docs/configuration.md all follow from that one declaration.
 */

/**
 * One environment variable: its schema validates it, gives its default and turns it into the
 * setting's value; the schema's `meta` is its documentation.
 */
export class Variable<S extends z.ZodType = z.ZodType> {
  constructor(
    readonly name: string,
    readonly schema: S,
  ) {}
}

/**
 * `description` is what docs/configuration.md says of the variable; `shownDefault` stands there
 * for a default that is computed or absent.
 */
export function variable<S extends z.ZodType>(
  name: string,
  schema: S,
  description: string,
  shownDefault?: string,
): Variable<S> {
  return new Variable(
    name,
    schema.meta(shownDefault ? { description, shownDefault } : { description }),
  );
}

type Inputs = Readonly<Record<string, Variable>>;
type ValuesOf<I extends Inputs> = { [K in keyof I]: z.output<I[K]['schema']> };

/**
 * A setting computed from several variables, or checked against others; what cannot work goes
 * to `problems`, one line each naming the variable.
 */
export class Derived<T> {
  constructor(
    readonly inputs: Inputs,
    readonly compute: (values: Record<string, unknown>, problems: string[]) => T,
  ) {}
}

export function derived<I extends Inputs, T>(
  inputs: I,
  compute: (values: ValuesOf<I>, problems: string[]) => T,
): Derived<T> {
  return new Derived(inputs, compute as (values: Record<string, unknown>, problems: string[]) => T);
}

/** A tree of settings, as `Config` nests them. */
export type Declarations = { readonly [key: string]: Variable | Derived<unknown> | Declarations };

/** The value of each setting of `D`, nested as `D` is (its doc comments carry over). */
export type Settings<D> =
  D extends Variable<infer S>
    ? z.output<S>
    : D extends Derived<infer T>
      ? T
      : { -readonly [K in keyof D]: Settings<D[K]> };

/**
 * Every variable of `declarations`, each once, in the order they first appear; a name declared
 * twice is refused, as the two would disagree.
 */
export function variablesOf(declarations: Declarations): Variable[] {
  const byName = new Map<string, Variable>();
  const add = (variable: Variable) => {
    const known = byName.get(variable.name);
    if (known === undefined) byName.set(variable.name, variable);
    else if (known !== variable) throw new Error(`${variable.name} is declared twice`);
  };
  const visit = (node: Declarations[string]) => {
    if (node instanceof Variable) add(node);
    else if (node instanceof Derived) Object.values(node.inputs).forEach(add);
    else Object.values(node).forEach(visit);
  };
  visit(declarations);
  return [...byName.values()];
}

/** The object schema of those variables, keyed by name: what parses the environment. */
export function schemaOf(declarations: Declarations): z.ZodObject<Record<string, z.ZodType>> {
  return z.object(Object.fromEntries(variablesOf(declarations).map((v) => [v.name, v.schema])));
}

/** The settings of `declarations` from the parsed environment (values by variable name). */
export function settingsOf<D extends Declarations>(
  declarations: D,
  env: Record<string, unknown>,
  problems: string[],
): Settings<D> {
  const valueOf = (node: Declarations[string]): unknown => {
    if (node instanceof Variable) return env[node.name];
    if (node instanceof Derived) {
      const values = Object.entries(node.inputs).map(([key, input]): [string, unknown] => [
        key,
        env[input.name],
      ]);
      return node.compute(Object.fromEntries(values), problems);
    }
    return Object.fromEntries(Object.entries(node).map(([key, child]) => [key, valueOf(child)]));
  };
  return valueOf(declarations) as Settings<D>;
}
