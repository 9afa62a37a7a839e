import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { CONFIG_DOCS_FILE, renderConfigDocs } from '../../tools/scripts/config-docs';

describe('docs/configuration.md', () => {
  // On a failure, `npm run docs:config` writes the file anew from src/config/index.ts.
  it('is what npm run docs:config renders from the configuration schema now', () => {
    expect(readFileSync(CONFIG_DOCS_FILE, 'utf8')).toBe(renderConfigDocs());
  });

  it('shows each default as the schema has it, through preprocessing and transforms, or as shownDefault says', () => {
    const schema = z.object({
      A_PORT: z.coerce.number().default(3000).meta({ description: 'A port.' }),
      A_NAME: z
        .preprocess((v) => (v === '' ? undefined : v), z.string().default('engine'))
        .meta({ description: 'A name.' }),
      A_SWITCH: z.enum(['true', 'false']).default('true').meta({ description: 'A switch.' }),
      A_LIMIT_SECONDS: z.coerce
        .number()
        .default(900)
        .transform((seconds) => seconds * 1000)
        .meta({ description: 'A limit.' }),
      A_URL: z.string().optional().meta({ description: 'A URL.' }),
      A_DIR: z
        .string()
        .default('/abs/path')
        .meta({ description: 'A folder.', shownDefault: 'here' }),
    });
    const rows = renderConfigDocs(schema)
      .split('\n')
      .filter((line) => line.startsWith('| `A_'));
    expect(
      rows.map((row) =>
        row
          .split('|')
          .map((cell) => cell.trim())
          .slice(1, 4),
      ),
    ).toEqual([
      ['`A_PORT`', '`3000`', 'A port.'],
      ['`A_NAME`', '`engine`', 'A name.'],
      ['`A_SWITCH`', '`true`', 'A switch.'],
      ['`A_LIMIT_SECONDS`', '`900`', 'A limit.'],
      ['`A_URL`', 'unset', 'A URL.'],
      ['`A_DIR`', 'here', 'A folder.'],
    ]);
  });

  it('refuses a variable without a description', () => {
    const schema = z.object({ UNDOCUMENTED: z.string().optional() });
    expect(() => renderConfigDocs(schema)).toThrow('UNDOCUMENTED has no description');
  });
});
