import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { PlatformConfig } from '../config/config.js'
import type { AudioLink } from '../recordings/recording-data.js'
import type { Database, Queryable } from '../storage/database.js'
import { DirectoryStore } from './directory-store.js'
import { MediaLinks } from './media-links.js'
import type { MediaStore } from './media-store.js'
import { GARBAGE_CHANNEL } from './media-upkeep.js'

export type MediaSettings = Pick<
  PlatformConfig,
  | 'dataDir'
  | 'publicUrl'
  | 'mediaUrlTtlSeconds'
  | 'mediaMaxBytes'
  | 'mediaDir'
  | 'mediaS3Bucket'
  | 'mediaS3ForcePathStyle'
>

/** Stored audio: where the files are, and the links that let partners fetch them. */
export class Media {
  /** Where partners reach the partner listener; set once it listens, unless configured. */
  publicUrl: string
  /** Counts the replacements and deletions of stored audio any instance committed since this one started. */
  changes = 0

  constructor(
    readonly store: MediaStore,
    readonly links: MediaLinks,
    readonly settings: MediaSettings,
    private cleanUp: () => Promise<void>,
  ) {
    this.publicUrl = settings.publicUrl ?? ''
  }

  /** Mints links for the answers made for one enterprise (reading the signing keys first if stale). */
  async audioLinks(enterpriseId: number): Promise<AudioLink> {
    await this.links.ready()
    const ttl = this.settings.mediaUrlTtlSeconds
    return (audioId, sha256) =>
      `${this.publicUrl}/media/v1/${this.links.sign({ enterpriseId, audioId, sha256 }, ttl)}`
  }

  /** Counts committed replacements and deletions (their NOTIFY) until close(). */
  async watchChanges(db: Database): Promise<void> {
    const unlisten = await db.listen(GARBAGE_CHANNEL, () => this.changes++)
    const cleanUp = this.cleanUp
    this.cleanUp = async () => {
      await unlisten()
      await cleanUp()
    }
  }

  close(): Promise<void> {
    return this.cleanUp()
  }
}

/**
 * The configured store: a bucket when EARSHOT_MEDIA_S3_BUCKET is set, else EARSHOT_MEDIA_DIR or
 * `<data dir>/media` (a temporary directory, removed on close, for an in-memory database).
 */
export async function openMedia(
  settings: MediaSettings,
  db: Queryable,
  clock: () => number,
  randomBytes: (size: number) => Buffer,
): Promise<Media> {
  const links = new MediaLinks(db, clock, randomBytes)
  if (settings.mediaS3Bucket !== undefined) {
    const { bucketStoreFromEnvironment } = await import('./bucket-store.js')
    return new Media(
      bucketStoreFromEnvironment(settings.mediaS3Bucket, settings.mediaS3ForcePathStyle),
      links,
      settings,
      async () => {},
    )
  }
  if (settings.mediaDir !== undefined || settings.dataDir !== 'memory://') {
    const root = settings.mediaDir ?? join(settings.dataDir, 'media')
    return new Media(new DirectoryStore(root), links, settings, async () => {})
  }
  const root = await mkdtemp(join(tmpdir(), 'earshot-media-'))
  return new Media(new DirectoryStore(root), links, settings, () =>
    rm(root, { recursive: true, force: true }),
  )
}
