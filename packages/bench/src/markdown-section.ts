import { readFileSync, writeFileSync } from 'node:fs'

/** docs/benchmarks.md, seen from packages/bench/dist/. */
export const BENCHMARKS_DOC = new URL('../../../docs/benchmarks.md', import.meta.url)

export interface SectionPlacement {
  /** The heading written above the markers when the section does not exist yet. */
  heading: string
  /** The end marker of the section the new one goes after; the end of the file when absent. */
  after?: string
}

/**
 * Replaces what lies between `<!-- bench:NAME:start -->` and `<!-- bench:NAME:end -->` in a markdown
 * file with `content`, leaving the rest of the file as it was. When the markers are missing, the
 * section (heading and markers) is added after the `after` marker, or at the end.
 */
export function writeMarkdownSection(
  file: URL,
  name: string,
  content: string,
  placement: SectionPlacement,
): void {
  const start = `<!-- bench:${name}:start -->`
  const end = `<!-- bench:${name}:end -->`
  const current = readFileSync(file, 'utf8')
  const from = current.indexOf(start)
  const to = current.indexOf(end)
  if (from >= 0 && to > from) {
    writeFileSync(file, `${current.slice(0, from + start.length)}\n${content}\n${current.slice(to)}`)
    return
  }
  const block = `\n${placement.heading}\n\n${start}\n${content}\n${end}\n`
  const anchor = placement.after === undefined ? -1 : current.indexOf(placement.after)
  if (anchor < 0) {
    writeFileSync(file, `${current.trimEnd()}\n${block}`)
    return
  }
  const lineEnd = current.indexOf('\n', anchor)
  const cut = lineEnd < 0 ? current.length : lineEnd + 1
  writeFileSync(file, `${current.slice(0, cut)}${block}${current.slice(cut)}`)
}
