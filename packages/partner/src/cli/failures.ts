import { mkdir } from 'node:fs/promises'
import { dirname } from 'node:path'
import { CommandFailure } from '@earshot/support/cli'
import { EarshotApiError, EarshotError } from '../client/errors.js'

/** Credentials missing or unusable: reported with the code ERR_EARSHOT_CONFIG. */
export class CredentialsFailure extends CommandFailure {
  readonly code = 'ERR_EARSHOT_CONFIG'
}

/** A file or folder the command could not read or write: reported with the code ERR_EARSHOT_FILE. */
export class FileFailure extends CommandFailure {
  readonly code = 'ERR_EARSHOT_FILE'
}

export interface Failure {
  code: number | string
  msg: string
}

/**
 * A failure as the CLI reports it: `code` is the catalogue code (a number) of a refusal, by the platform
 * or before sending, else the client error's `ERR_EARSHOT_…` string (ERR_EARSHOT_NETWORK,
 * ERR_EARSHOT_RESPONSE, …; ERR_EARSHOT_CONFIG for credentials, ERR_EARSHOT_FILE for the file system,
 * ERR_EARSHOT_COMMAND for the command's own failures, ERR_EARSHOT_INTERNAL for anything unforeseen).
 */
export function failureOf(error: unknown): Failure {
  if (error instanceof EarshotApiError) return { code: error.code, msg: error.msg }
  if (error instanceof EarshotError) return { code: error.code, msg: error.message }
  if (error instanceof CredentialsFailure || error instanceof FileFailure)
    return { code: error.code, msg: error.message }
  if (error instanceof CommandFailure) return { code: 'ERR_EARSHOT_COMMAND', msg: error.message }
  if (isFileSystemError(error)) return { code: 'ERR_EARSHOT_FILE', msg: describeFileError(error) }
  return { code: 'ERR_EARSHOT_INTERNAL', msg: error instanceof Error ? error.message : String(error) }
}

/** The line a person reads on stderr: `error 4040: …` for a refusal, else the message itself. */
export function failureLine({ code, msg }: Failure): string {
  return typeof code === 'number' ? `error ${code}: ${msg}` : msg
}

type FileSystemError = NodeJS.ErrnoException & { code: string; syscall: string }

function isFileSystemError(error: unknown): error is FileSystemError {
  const { code, syscall } = (error ?? {}) as NodeJS.ErrnoException
  return typeof code === 'string' && /^E[A-Z]+$/.test(code) && typeof syscall === 'string'
}

const REASONS: Record<string, string> = {
  ENOENT: 'no such file or folder',
  ENOTDIR: 'a part of the path is a file, not a folder',
  EEXIST: 'it exists already',
  EISDIR: 'it is a folder',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'the file system is read-only',
  ENOSPC: 'no space left on the device',
}

/** `cannot open downloads/a.wav.part: no such file or folder (ENOENT)`: no stack, no errno number. */
export function describeFileError(error: FileSystemError): string {
  const reason = REASONS[error.code] ?? error.message.replace(/^E[A-Z]+: /, '').replace(/, .*$/, '')
  const where = error.path === undefined ? '' : ` ${error.path}`
  return `cannot ${error.syscall}${where}: ${reason} (${error.code})`
}

/**
 * Makes the folder `file` goes in (mkdir -p), or refuses in one line naming the option: its parent is a
 * file, or may not be written.
 */
export async function makeFolderFor(file: string, option: string): Promise<void> {
  const folder = dirname(file)
  try {
    await mkdir(folder, { recursive: true })
  } catch (error) {
    const known = isFileSystemError(error) ? error.code : undefined
    // mkdir -p meeting a file where a folder should be says EEXIST (the folder itself) or ENOTDIR.
    const reason = known === 'EEXIST' ? 'a file is in the way' : known && REASONS[known]
    const code = known ? ` (${known})` : ''
    throw new FileFailure(
      `${option} ${file}: cannot create the folder ${folder}: ${reason ?? (error as Error).message}${code}`,
    )
  }
}
