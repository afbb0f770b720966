import { readFileSync, writeFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

/*
 * A section of a document that the code writes (the configuration reference, the operator guide's
 * permission table): the lines between two markers are the code's, the text around them is written by hand.
 */

export const END_MARKER = '<!-- END GENERATED -->'

/** The document with the section after `beginMarker` replaced by `section`. */
export function withSection(document: string, beginMarker: string, section: string, name: string): string {
  const begin = document.indexOf(beginMarker)
  const end = begin < 0 ? -1 : document.indexOf(END_MARKER, begin)
  if (begin < 0 || end < 0) throw new Error(`${name} must hold the lines\n${beginMarker}\n${END_MARKER}`)
  return `${document.slice(0, begin + beginMarker.length)}\n${section}\n${document.slice(end)}`
}

/** Text for a markdown table's cell. */
export function cell(text: string): string {
  return text.replaceAll('|', '\\|').replaceAll('\n', ' ')
}

/**
 * `node GENERATOR.js [--check]` for the module at `moduleUrl`, when it is the script run: rewrites the
 * document's section, or (with --check) exits 1 when it is out of date, saying which command rewrites it.
 */
export function runWhenMain(
  moduleUrl: string,
  document: URL,
  current: (text: string) => string,
  command: string,
): void {
  if (!process.argv[1] || fileURLToPath(moduleUrl) !== resolve(process.argv[1])) return
  const path = fileURLToPath(document)
  const text = readFileSync(path, 'utf8')
  const rewritten = current(text)
  if (process.argv.includes('--check')) {
    if (rewritten !== text) {
      process.stderr.write(`${path} is out of date with the code: run ${command}\n`)
      process.exitCode = 1
    }
    return
  }
  if (rewritten !== text) writeFileSync(path, rewritten)
  process.stdout.write(`${path}: ${rewritten === text ? 'already current' : 'rewritten'}\n`)
}
