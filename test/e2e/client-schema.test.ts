import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  CLIENT_SRC,
  generateClientFiles,
  servedDocument,
} from '../../tools/scripts/client-generate';
import { clientFor } from '../support/http';
import { useTestEngine } from '../support/hooks';

const engine = useTestEngine();

describe('the TypeScript client’s generated files', () => {
  it('match the document the API serves: run `npm run client:generate` when this fails', async () => {
    const served = await clientFor(engine.url, null).get('/api/v1/openapi.json');
    expect(served.status).toBe(200);
    // The generator builds the document in-process: it must be the one the server answers.
    expect(servedDocument()).toEqual(served.body);
    const files = await generateClientFiles(served.body);
    expect(Object.keys(files).sort()).toEqual(['operations.ts', 'schema.d.ts']);
    for (const [name, text] of Object.entries(files)) {
      expect({ name, text: readFileSync(path.join(CLIENT_SRC, name), 'utf8') }).toEqual({
        name,
        text,
      });
    }
  });
});
