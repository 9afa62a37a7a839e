import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { envSchema } from '../../src/config';

/**
 * `npm run docs:config`: renders docs/configuration.md from the configuration schema, so that
 * the reference cannot say what the code does not. test/tooling/config-docs.test.ts fails when the
 * file and the schema differ.
 */
export const CONFIG_DOCS_FILE = path.join(__dirname, '..', '..', 'docs', 'configuration.md');

const HEADER = `# Configuration

Everything is read from the environment, in one place (\`src/config/index.ts\`), and validated at
start-up: an invalid value stops the process with \`Invalid configuration: ...\`.

This file is generated from the schema in \`src/config/index.ts\` by \`npm run docs:config\`; edit
the descriptions there, not here.
`;

/**
 * The schema's own default, looked for through the wrappers a variable may have: after a
 * preprocessing step, or before the transform that makes the setting's value.
 */
function schemaDefault(schema: z.ZodType): unknown {
  if (schema instanceof z.ZodDefault) return schema.def.defaultValue;
  if (schema instanceof z.ZodPipe) {
    return schemaDefault(schema.def.out as z.ZodType) ?? schemaDefault(schema.def.in as z.ZodType);
  }
  return undefined;
}

function shownDefault(name: string, schema: z.ZodType): string {
  const shown = schema.meta()?.shownDefault;
  if (typeof shown === 'string') return shown;
  const value = schemaDefault(schema);
  if (value === undefined) return 'unset';
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
    return `\`${value}\``;
  }
  throw new Error(`${name}: its default needs a shownDefault`);
}

/** Cells padded as Prettier aligns a Markdown table, so that the file passes its check. */
function table(rows: string[][]): string {
  const cells = rows.map((row) => row.map((cell) => cell.replace(/\|/g, '\\|')));
  const widths = cells[0]!.map((_, i) => Math.max(3, ...cells.map((row) => row[i]!.length)));
  const line = (row: string[]) =>
    `| ${row.map((cell, i) => cell.padEnd(widths[i]!)).join(' | ')} |`;
  const rule = `| ${widths.map((width) => '-'.repeat(width)).join(' | ')} |`;
  return [line(cells[0]!), rule, ...cells.slice(1).map(line)].join('\n');
}

/** The Markdown of docs/configuration.md: each variable of the schema, its default and meaning. */
export function renderConfigDocs(schema: z.ZodObject = envSchema): string {
  const rows = Object.entries(schema.shape).map(([name, variable]: [string, z.ZodType]) => {
    const description = variable.meta()?.description;
    if (!description) throw new Error(`${name} has no description in src/config/index.ts`);
    return [`\`${name}\``, shownDefault(name, variable), description];
  });
  return `${HEADER}\n${table([['Variable', 'Default', 'Meaning'], ...rows])}\n`;
}

if (require.main === module) {
  writeFileSync(CONFIG_DOCS_FILE, renderConfigDocs());
  console.log(`wrote ${path.relative(process.cwd(), CONFIG_DOCS_FILE)}`);
}
