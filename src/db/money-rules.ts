import { sql, type FragmentSqlToken, type IdentifierSqlToken } from 'slonik';
import {
  compareValues,
  type Expr,
  type Facts,
  type MoneyStep,
  type Term,
  type Value,
} from '../domain/money-rules';

/**
 * A money step's rules (src/domain/money-rules.ts) compiled to one SQL boolean that holds where
 * `decide` would pass over the same facts (columns `<subject>_<field>`, `factsOf`). What depends
 * on the bound parameters alone is decided here, in TypeScript.
 */

/** A compiled part: a truth decided here (SQL's three values), or SQL for the database. */
type Part = boolean | null | FragmentSqlToken;

const column = (subject: string, field: string): IdentifierSqlToken =>
  sql.identifier([`${subject}_${field}`]);

function bound(v: Exclude<Value, null>): FragmentSqlToken {
  if (typeof v === 'bigint') return sql.fragment`${v.toString()}::int8`;
  if (typeof v === 'boolean') return sql.fragment`${v}::boolean`;
  return sql.fragment`${v}`;
}

const OPERATORS = {
  eq: sql.fragment`=`,
  ne: sql.fragment`<>`,
  lt: sql.fragment`<`,
  le: sql.fragment`<=`,
  gt: sql.fragment`>`,
  ge: sql.fragment`>=`,
} as const;

const isSql = (p: Part): p is FragmentSqlToken => p !== null && typeof p !== 'boolean';

function compileExpr(expr: Expr, params: Facts<string, string>['params']): Part {
  const paramOf = (name: string): Value => {
    const v = params[name];
    if (v === undefined) throw new Error(`money rules: parameter ${name} not given`);
    return v;
  };
  const constant = (term: Term): Value | undefined =>
    'value' in term ? term.value : 'param' in term ? paramOf(term.param) : undefined;
  const operand = (term: Term): FragmentSqlToken => {
    if ('subject' in term) return sql.fragment`${column(term.subject, term.field)}`;
    const v = constant(term)!;
    return v === null ? sql.fragment`NULL` : bound(v);
  };
  switch (expr.op) {
    case 'exists':
      return sql.fragment`(${column(expr.subject, 'id')} IS NOT NULL)`;
    case 'absent':
      return paramOf(expr.param) === null;
    case 'not': {
      const inner = compileExpr(expr.of, params);
      if (inner === null) return null;
      return typeof inner === 'boolean' ? !inner : sql.fragment`(NOT ${inner})`;
    }
    case 'and':
    case 'or': {
      // As `truthOf`: a decisive value wins, else null (unknown) stays in the SQL.
      const decisive = expr.op === 'or';
      const parts = expr.of.map((e) => compileExpr(e, params));
      if (parts.includes(decisive)) return decisive;
      const open = parts.filter(isSql);
      const unknown = parts.includes(null);
      if (open.length === 0) return unknown ? null : !decisive;
      const all = unknown ? [...open, sql.fragment`NULL::boolean`] : open;
      return sql.fragment`(${sql.join(all, decisive ? sql.fragment` OR ` : sql.fragment` AND `)})`;
    }
    default: {
      const left = constant(expr.left);
      const right = constant(expr.right);
      if (left !== undefined && right !== undefined) {
        if (left === null || right === null) return null;
        return compareValues(expr.op, left, right);
      }
      return sql.fragment`(${operand(expr.left)} ${OPERATORS[expr.op]} ${operand(expr.right)})`;
    }
  }
}

/**
 * The index in `step.rules` of the first rule that does not hold over the facts' columns, or
 * NULL when every rule holds: `decide`, in SQL (a rule whose facts are null does not hold).
 */
export function firstBrokenRule<S extends string, P extends string>(
  step: MoneyStep<S, P>,
  params: Facts<S, P>['params'],
): FragmentSqlToken {
  const branches: FragmentSqlToken[] = [];
  for (const [index, rule] of step.rules.entries()) {
    const part = compileExpr(rule.holds, params);
    if (part === true) continue;
    if (isSql(part)) {
      branches.push(sql.fragment`WHEN NOT coalesce(${part}, false) THEN ${index}::int`);
      continue;
    }
    // False or unknown whatever the facts: this rule declines, and no later one is asked.
    branches.push(sql.fragment`WHEN true THEN ${index}::int`);
    break;
  }
  if (branches.length === 0) return sql.fragment`NULL::int`;
  return sql.fragment`(CASE ${sql.join(branches, sql.fragment` `)} END)`;
}

/**
 * Every rule of the step as one SQL boolean over the facts' columns: true only where each rule
 * holds (`firstBrokenRule` finds none).
 */
export function compileRules<S extends string, P extends string>(
  step: MoneyStep<S, P>,
  params: Facts<S, P>['params'],
): FragmentSqlToken {
  return sql.fragment`(${firstBrokenRule(step, params)} IS NULL)`;
}

export { HOLD_FIELDS, WALLET_FIELDS } from './wallet-facts';

/**
 * `alias.field AS subject_field` for each field: a subject's columns in the one-row relation of
 * facts that `compileRules` reads. A relation that lacks a field passes `null` for it.
 */
export function factColumns(
  subject: string,
  alias: string,
  fields: readonly string[],
): FragmentSqlToken {
  const columns = fields.map(
    (field) => sql.fragment`${sql.identifier([alias, field])} AS ${column(subject, field)}`,
  );
  return sql.fragment`${sql.join(columns, sql.fragment`, `)}`;
}

/**
 * A money step written in one statement: `prelude` (parts of its WITH) locks and reads the facts;
 * `guard` holds where every rule holds and the step may be written; `declined` is the index of the
 * declining rule (`firstBrokenRule`), or NULL.
 */
export type MoneyStepGuard = {
  prelude: FragmentSqlToken;
  guard: FragmentSqlToken;
  declined: FragmentSqlToken;
};
