// @ts-check
'use strict';

/**
 * Lines of text in a comment, not counting a `/**` or `*\/` alone on its line.
 * @param {import('eslint').AST.Token | import('estree').Comment} comment
 */
function textLines(comment) {
  if (!comment.loc) return 0;
  let lines = comment.loc.end.line - comment.loc.start.line + 1;
  if (comment.type === 'Block') {
    if (/^\**[ \t]*\r?\n/.test(comment.value)) lines--;
    if (/\r?\n[ \t]*\**$/.test(comment.value)) lines--;
  }
  return lines;
}

/**
 * House style: a comment says why in one to three lines, and reference lives in `docs/`.
 * Line comments alone on consecutive lines count as one comment.
 * @type {import('eslint').Rule.RuleModule}
 */
const commentLines = {
  meta: {
    type: 'suggestion',
    docs: { description: 'A comment says why in at most three lines' },
    schema: [
      {
        type: 'object',
        properties: { max: { type: 'integer', minimum: 1 } },
        additionalProperties: false,
      },
    ],
    messages: {
      tooLong: 'A comment of {{lines}} lines: say why in at most {{max}}; reference goes in docs/.',
    },
  },
  create(context) {
    /** @type {{ max?: number } | undefined} */
    const options = context.options[0];
    const max = options?.max ?? 3;
    return {
      Program() {
        /** @type {{ loc: import('estree').SourceLocation, lines: number, line: boolean }[]} */
        const groups = [];
        for (const comment of context.sourceCode.getAllComments()) {
          if (!comment.loc || (comment.type !== 'Line' && comment.type !== 'Block')) continue;
          const previous = groups.at(-1);
          const before = context.sourceCode.getTokenBefore(comment, { includeComments: false });
          // A comment after code on its line labels that line alone.
          const ownLine = !before || before.loc.end.line < comment.loc.start.line;
          if (
            ownLine &&
            comment.type === 'Line' &&
            previous?.line &&
            previous.loc.end.line === comment.loc.start.line - 1
          ) {
            previous.lines++;
            previous.loc = { start: previous.loc.start, end: comment.loc.end };
          } else {
            groups.push({
              loc: comment.loc,
              lines: textLines(comment),
              line: ownLine && comment.type === 'Line',
            });
          }
        }
        for (const group of groups) {
          if (group.lines <= max) continue;
          context.report({
            loc: group.loc,
            messageId: 'tooLong',
            data: { lines: String(group.lines), max: String(max) },
          });
        }
      },
    };
  },
};

module.exports = { commentLines };
