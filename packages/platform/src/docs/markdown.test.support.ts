import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * What the tests of the repository's docs/ share: reading a document, finding the code block a comment
 * marks (`<!-- example: NAME -->`, `<!-- procedure: NAME -->`, or `<!-- newcomer: NAME -->` for
 * scripts/newcomer.mjs, right above the fence), and running a shell
 * procedure exactly as written.
 */

/** The repository's root (this module runs from packages/platform/dist/docs/). */
export const repositoryRoot = fileURLToPath(new URL('../../../../', import.meta.url))

export function readDocument(path: string): string {
  return readFileSync(join(repositoryRoot, path), 'utf8')
}

export interface CodeBlock {
  language: string
  text: string
}

/** The fenced block right after `<!-- kind: name -->` (blank lines between them allowed). */
export function markedBlock(
  markdown: string,
  kind: 'example' | 'procedure' | 'newcomer',
  name: string,
): CodeBlock {
  const marker = `<!-- ${kind}: ${name} -->`
  const at = markdown.indexOf(marker)
  if (at < 0) throw new Error(`no ${marker} in the document`)
  if (markdown.indexOf(marker, at + marker.length) >= 0) throw new Error(`${marker} appears twice`)
  const match = /^\s*```([\w.-]*)\n([\s\S]*?)\n```/.exec(markdown.slice(at + marker.length))
  if (!match) throw new Error(`${marker} is not followed by a fenced code block`)
  return { language: match[1] ?? '', text: `${match[2]}\n` }
}

/** Every name marked `<!-- kind: NAME -->` in the document, in order. */
export function markedNames(markdown: string, kind: 'example' | 'procedure'): string[] {
  return [...markdown.matchAll(new RegExp(`<!-- ${kind}: ([\\w.-]+) -->`, 'g'))].map(
    (match) => match[1] as string,
  )
}

export interface ShellRun {
  code: number | null
  stdout: string
  stderr: string
}

/**
 * Runs a procedure with `sh -eu` (stop at the first failing command or unset variable) in an environment
 * of PATH, HOME and `variables` only, so that it uses nothing the document does not name.
 */
export function runProcedure(script: string, variables: Record<string, string>, path = process.env.PATH) {
  return new Promise<ShellRun>((resolve, reject) => {
    const child = spawn('sh', ['-eu', '-c', script], {
      env: { PATH: path ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...variables },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => {
      stdout += chunk
    })
    child.stderr.on('data', (chunk) => {
      stderr += chunk
    })
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

/** The anchors GitHub makes of a document's headings. */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>()
  const seen = new Map<string, number>()
  let fenced = false
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced
    const heading = fenced ? null : /^#{1,6} +(.*?) *#* *$/.exec(line)
    if (!heading) continue
    const base = (heading[1] as string)
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, '')
      .replace(/ /g, '-')
    const count = seen.get(base) ?? 0
    seen.set(base, count + 1)
    anchors.add(count === 0 ? base : `${base}-${count}`)
  }
  return anchors
}

/** The rows of the first table after a heading, each as its trimmed cells. */
export function tableAfter(markdown: string, heading: string): string[][] {
  const text = `\n${markdown}`
  const start = text.indexOf(`\n${heading}\n`)
  if (start < 0) throw new Error(`no heading "${heading}"`)
  const lines = text.slice(start).split('\n')
  const first = lines.findIndex((line) => line.startsWith('|'))
  const rows: string[][] = []
  for (const line of lines.slice(first)) {
    if (!line.startsWith('|')) break
    rows.push(
      line
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((cell) => cell.trim()),
    )
  }
  return rows.slice(2)
}
