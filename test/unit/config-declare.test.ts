import { z } from 'zod';
import { derived, schemaOf, settingsOf, variable, variablesOf } from '../../src/config/declare';

/** How a setting is declared once (src/config/declare.ts): its variables, its value, its type. */

const SHARED = variable('A_SHARED', z.string().default('dev'), 'Read by two settings.');

const declarations = {
  name: SHARED,
  limits: {
    timeoutMs: variable(
      'A_TIMEOUT_SECONDS',
      z.coerce
        .number()
        .default(5)
        .transform((seconds) => seconds * 1000),
      'A timeout.',
    ),
  },
  greeting: derived(
    { who: variable('A_WHO', z.string().optional(), 'Who.', 'nobody'), env: SHARED },
    ({ who, env }, problems) => {
      if (!who) problems.push('A_WHO: required');
      return `${who ?? '?'}@${env}`;
    },
  ),
};

describe('src/config/declare.ts', () => {
  it('lists each variable once, in the order it first appears, with its documentation', () => {
    expect(variablesOf(declarations).map((v) => v.name)).toEqual([
      'A_SHARED',
      'A_TIMEOUT_SECONDS',
      'A_WHO',
    ]);
    expect(schemaOf(declarations).shape.A_WHO!.meta()).toEqual({
      description: 'Who.',
      shownDefault: 'nobody',
    });
  });

  it('makes the settings, nested as declared, derived ones reporting their problems', () => {
    const problems: string[] = [];
    const env = schemaOf(declarations).parse({ A_TIMEOUT_SECONDS: '2', A_WHO: 'ann' });
    const settings = settingsOf(declarations, env, problems);
    expect(settings).toEqual({ name: 'dev', limits: { timeoutMs: 2000 }, greeting: 'ann@dev' });
    expect(problems).toEqual([]);
    // The type follows the declarations.
    const timeout: number = settings.limits.timeoutMs;
    expect(timeout).toBe(2000);

    settingsOf(declarations, schemaOf(declarations).parse({}), problems);
    expect(problems).toEqual(['A_WHO: required']);
  });

  it('refuses a name declared twice', () => {
    const twice = {
      a: variable('A_NAME', z.string(), 'One.'),
      b: variable('A_NAME', z.string(), 'The other.'),
    };
    expect(() => variablesOf(twice)).toThrow('A_NAME is declared twice');
  });
});
