import { Linter } from 'eslint';
import { parser } from 'typescript-eslint';
import { commentLines } from '../../tools/lint/comment-lines.cjs';

/** The rule as `npm run lint` runs it, on a TypeScript file, without the type-checked rules. */
function lint(code: string, max?: number) {
  const linter = new Linter({ configType: 'flat' });
  return linter.verify(
    code,
    [
      {
        files: ['**/*.ts'],
        languageOptions: { parser },
        plugins: { house: { rules: { 'comment-lines': commentLines } } },
        rules: { 'house/comment-lines': max === undefined ? 'error' : ['error', { max }] },
      },
    ],
    { filename: 'sample.ts' },
  );
}

describe('the comment-length rule (tools/lint/comment-lines.cjs, in npm run lint)', () => {
  it('passes comments of up to three lines of text, however they are delimited', () => {
    const code = [
      '/** One line. */',
      'export const a = 1;',
      '/**',
      ' * Three lines of text:',
      ' * the delimiters alone on their lines',
      ' * do not count.',
      ' */',
      'export const b = 2;',
      '// Two line comments',
      '// in a row.',
      'export const c = 3; // and one after code',
      '/* A block',
      '   of three',
      '   lines. */',
      'export const d = 4;',
    ].join('\n');
    expect(lint(code)).toEqual([]);
  });

  it('reports a block of four lines and a run of four line comments, once each, where they start', () => {
    const code = [
      'export const a = 1;',
      '/**',
      ' * One,',
      ' * two,',
      ' * three,',
      ' * four.',
      ' */',
      'export const b = 2;',
      '// One,',
      '// two,',
      '// three,',
      '// four.',
      'export const c = 3;',
    ].join('\n');
    const messages = lint(code);
    expect(messages.map((m) => [m.ruleId, m.line, m.endLine, m.message])).toEqual([
      [
        'house/comment-lines',
        2,
        7,
        'A comment of 4 lines: say why in at most 3; reference goes in docs/.',
      ],
      [
        'house/comment-lines',
        9,
        12,
        'A comment of 4 lines: say why in at most 3; reference goes in docs/.',
      ],
    ]);
  });

  it('counts comments after code on their own line, one each', () => {
    const code = [
      'export const hosts = [',
      "  'a', // one",
      "  'b', // two",
      "  'c', // three",
      "  'd', // four",
      '];',
    ];
    expect(lint(code.join('\n'))).toEqual([]);
  });

  it('counts line comments apart when code or a blank line separates them', () => {
    const code = ['// One,', '// two.', '', '// Three,', '// four.', 'const x = 1;', '// five.'];
    expect(lint(code.join('\n'))).toEqual([]);
    expect(lint(code.join('\n'), 1).map((m) => m.line)).toEqual([1, 4]);
  });
});
