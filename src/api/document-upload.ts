import busboy from 'busboy';
import type Koa from 'koa';
import type { DocumentContentType } from '../db/payout-accounts';
import { AppError } from './errors';

/** docs/api.md, Test Mode sandbox: an identity document is at most 10 MiB. */
export const MAX_DOCUMENT_BYTES = 10 * 1024 * 1024;

/** What a multipart form around the file may add (boundaries, part headers, `purpose`). */
const MULTIPART_OVERHEAD_BYTES = 64 * 1024;

/** What the first bytes of a file say it is; null for anything but JPEG, PNG or PDF. */
export function sniffDocumentType(head: Buffer): DocumentContentType | null {
  if (head.length >= 3 && head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) {
    return 'image/jpeg';
  }
  const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  if (head.subarray(0, 8).equals(png)) return 'image/png';
  if (head.subarray(0, 5).toString('latin1') === '%PDF-') return 'application/pdf';
  return null;
}

const DECLARED_ALIASES: Record<string, DocumentContentType> = {
  'image/jpeg': 'image/jpeg',
  'image/jpg': 'image/jpeg',
  'image/pjpeg': 'image/jpeg',
  'image/png': 'image/png',
  'application/pdf': 'application/pdf',
};

type Upload = {
  purpose: string | undefined;
  file: { declared: string; content: Buffer } | null;
  /** `file` came as a plain field (no filename): text, not a file. */
  fileAsText: boolean;
};

const tooLarge = () => new AppError('payload_too_large', 'The document is larger than 10 MiB');

/**
 * Reads the multipart form as it streams in: one `file` part, kept in memory up to 10 MiB (413
 * beyond, as soon as it is crossed), and the `purpose` field. Nothing is stored here.
 */
function readUpload(ctx: Koa.Context): Promise<Upload> {
  if (!ctx.is('multipart/form-data')) {
    return Promise.reject(
      new AppError(
        'invalid_request',
        'Send the document as multipart/form-data with the fields file and purpose',
      ),
    );
  }
  if (Number(ctx.get('content-length') || '0') > MAX_DOCUMENT_BYTES + MULTIPART_OVERHEAD_BYTES) {
    return Promise.reject(tooLarge());
  }
  return new Promise<Upload>((resolve, reject) => {
    const request = ctx.req;
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: request.headers,
        limits: { fileSize: MAX_DOCUMENT_BYTES, files: 1, fields: 4, fieldSize: 1024, parts: 6 },
      });
    } catch (error) {
      reject(new AppError('invalid_request', 'The multipart body is malformed', { cause: error }));
      return;
    }
    const upload: Upload = { purpose: undefined, file: null, fileAsText: false };
    let settled = false;
    /** Stops reading for good: the rest of the body is discarded, never buffered. */
    const fail = (error: AppError) => {
      if (settled) return;
      settled = true;
      request.unpipe(parser);
      request.resume();
      ctx.set('Connection', 'close');
      reject(error);
    };
    parser.on('file', (name, stream, info) => {
      if (name !== 'file' || upload.file) {
        stream.resume();
        return;
      }
      const chunks: Buffer[] = [];
      upload.file = { declared: info.mimeType.toLowerCase(), content: Buffer.alloc(0) };
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('limit', () => fail(tooLarge()));
      stream.on('end', () => {
        if (upload.file) upload.file.content = Buffer.concat(chunks);
      });
    });
    parser.on('field', (name, value) => {
      if (name === 'purpose') upload.purpose = value;
      if (name === 'file') upload.fileAsText = true;
    });
    // Past a limit busboy drops the rest silently, `purpose` included: refuse instead.
    for (const limit of ['partsLimit', 'fieldsLimit', 'filesLimit'] as const) {
      parser.on(limit, () =>
        fail(
          new AppError(
            'invalid_request',
            'The form has too many parts: send the fields file and purpose only',
          ),
        ),
      );
    }
    parser.on('error', (error) =>
      fail(new AppError('invalid_request', 'The multipart body is malformed', { cause: error })),
    );
    parser.on('close', () => {
      if (settled) return;
      settled = true;
      resolve(upload);
    });
    request.pipe(parser);
  });
}

/** The checked document: its purpose, then its type by content and by declaration. */
function checkedDocument(upload: Upload): { contentType: DocumentContentType; content: Buffer } {
  if (upload.purpose === undefined) throw new AppError('validation_failed', 'purpose: required');
  if (upload.purpose !== 'identity_document') {
    throw new AppError('validation_failed', 'purpose: must be identity_document');
  }
  if (!upload.file && upload.fileAsText) {
    throw new AppError(
      'invalid_request',
      'file must be sent as a file part of the form (with a filename), not as a text field',
    );
  }
  if (!upload.file) throw new AppError('validation_failed', 'file: required');
  const sniffed = sniffDocumentType(upload.file.content);
  const declared = DECLARED_ALIASES[upload.file.declared];
  if (!sniffed || declared !== sniffed) throw new AppError('unsupported_file_type');
  return { contentType: sniffed, content: upload.file.content };
}

/** The identity document of an upload, read as it streams in and checked (an AppError if not). */
export async function readDocument(
  ctx: Koa.Context,
): Promise<{ contentType: DocumentContentType; content: Buffer }> {
  return checkedDocument(await readUpload(ctx));
}
