import type { Rule } from 'eslint';

/** The house rule on comment length (comment-lines.cjs, in eslint.config.mjs). */
export declare const commentLines: Rule.RuleModule;
