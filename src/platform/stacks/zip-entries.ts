import type { Entry, ZipFile } from 'yauzl';
import { lazily } from '../../shared/lazy-require.js';
import { GatewayError } from '../../shared/http/errors.js';

const yauzl = lazily<typeof import('yauzl')>('yauzl');

/** What a package may be (the catalog uses the defaults below; tests pass smaller ones). */
export interface PackageLimits {
  /** The .zip itself. */
  maxZipBytes: number;
  /** All entries together, uncompressed. */
  maxUncompressedBytes: number;
  maxEntries: number;
  /** Uncompressed ÷ compressed, for an entry over 1 MiB: above it, a zip bomb. */
  maxRatio: number;
}

export const DEFAULT_PACKAGE_LIMITS: PackageLimits = {
  maxZipBytes: 10 * 1024 * 1024,
  maxUncompressedBytes: 50 * 1024 * 1024,
  maxEntries: 2_000,
  maxRatio: 100,
};

/**
 * Entries smaller than this are not held to the ratio: a small text file of repeats compresses well
 * and is harmless.
 */
const RATIO_FLOOR_BYTES = 1024 * 1024;
const S_IFMT = 0o170000;
const S_IFLNK = 0o120000;

/** Every file entry's content, read once, checked as it is read; only those `keep` names are kept. */
export async function readEntries(
  zip: Buffer,
  limits: PackageLimits,
  keep: (name: string) => boolean,
): Promise<Map<string, Buffer>> {
  let archive: ZipFile;
  try {
    archive = await new Promise<ZipFile>((resolve, reject) =>
      yauzl().fromBuffer(
        zip,
        { lazyEntries: true, validateEntrySizes: true, strictFileNames: true },
        (error, opened) => (error ? reject(error) : resolve(opened)),
      ),
    );
  } catch (error) {
    throw refusal('package', `It is not a readable .zip (${readableReason(error)}).`);
  }
  if (archive.entryCount > limits.maxEntries) {
    archive.close();
    throw refusal('package', `It has ${archive.entryCount} entries; at most ${limits.maxEntries} are taken.`);
  }
  const kept = new Map<string, Buffer>();
  let total = 0;
  try {
    for (;;) {
      const entry = await nextEntry(archive);
      if (!entry) break;
      const name = entry.fileName;
      if (((entry.externalFileAttributes >>> 16) & S_IFMT) === S_IFLNK)
        throw refusal(name, 'It is a symbolic link; packages hold plain files only.');
      if (entry.isEncrypted()) throw refusal(name, 'It is encrypted; packages are not.');
      if (name.endsWith('/')) continue;
      total += entry.uncompressedSize;
      if (total > limits.maxUncompressedBytes)
        throw refusal(name, `The files add up to more than ${limits.maxUncompressedBytes} bytes uncompressed.`);
      if (
        entry.uncompressedSize > RATIO_FLOOR_BYTES &&
        entry.uncompressedSize > limits.maxRatio * Math.max(1, entry.compressedSize)
      ) {
        throw refusal(
          name,
          `It is compressed ${Math.round(entry.uncompressedSize / Math.max(1, entry.compressedSize))} times; at most ${limits.maxRatio} is taken (a zip bomb?).`,
        );
      }
      // Every entry is read through (yauzl checks its real size against the declared one); only the
      // few the catalog needs are kept.
      const content = await readEntry(archive, entry);
      if (keep(name)) kept.set(name, content);
    }
  } catch (error) {
    if (error instanceof GatewayError) throw error;
    throw refusal(entryNameIn(error) ?? 'package', `It is not a readable .zip (${readableReason(error)}).`);
  } finally {
    archive.close();
  }
  return kept;
}

function nextEntry(archive: ZipFile): Promise<Entry | null> {
  return new Promise((resolve, reject) => {
    const cleanup = () => {
      archive.removeListener('entry', onEntry);
      archive.removeListener('end', onEnd);
      archive.removeListener('error', onError);
    };
    const onEntry = (entry: Entry) => (cleanup(), resolve(entry));
    const onEnd = () => (cleanup(), resolve(null));
    const onError = (error: Error) => (cleanup(), reject(error));
    archive.on('entry', onEntry);
    archive.on('end', onEnd);
    archive.on('error', onError);
    archive.readEntry();
  });
}

function readEntry(archive: ZipFile, entry: Entry): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    archive.openReadStream(entry, (error, stream) => {
      if (error) return reject(error);
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('error', reject);
      stream.on('end', () => resolve(Buffer.concat(chunks)));
    });
  });
}

/** A 400 that names the entry (or `package`) and the rule it broke. */
export function refusal(entry: string, rule: string): GatewayError {
  return new GatewayError('invalid_request', `The package is refused: ${entry}: ${rule}`, {
    details: [{ field: entry, message: rule }],
  });
}

export function readableReason(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).replace(/\s+/g, ' ').slice(0, 200);
}

/**
 * yauzl names the entry in its own errors about names ("absolute path: /x", "invalid relative path:
 * ../x").
 */
function entryNameIn(error: unknown): string | null {
  const match = /^(?:absolute path|invalid relative path|invalid characters in fileName): (.+)$/.exec(
    error instanceof Error ? error.message : '',
  );
  return match ? match[1]! : null;
}
