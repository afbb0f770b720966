/**
 * What a process run-tests gives a queue of files runs: the next file no process has taken, taken when the
 * file before it has finished, so that a process busy with a long file takes fewer and the processes end
 * together. Each file is imported in a suite named by its path, so that its top-level hooks apply to its
 * own tests alone; and, after the file's own hooks, a check that it left process.env as it found it, since
 * the files after it run under what it left.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, describe } from 'node:test'

/**
 * Runs the files of the queue in `directory` (its files.json: [path, URL] pairs) that this process takes, at
 * most `limit`, and none more once the process has grown past `memoryMb` megabytes (the runner starts
 * another process in its place). A file is taken by creating its claim in the queue's claims folder, which
 * fails when another process created it first: no file runs twice, and the claim names the process
 * (`owner`) for the runner, which runs again the files of a process that crashed and those no process took.
 */
export async function runQueue(directory, owner, { limit = Number.POSITIVE_INFINITY, memoryMb }) {
  const named = JSON.parse(readFileSync(join(directory, 'files.json'), 'utf8'))
  let taken = 0
  for (let index = 0; index < named.length && taken < limit; index++) {
    if (taken > 0 && process.memoryUsage.rss() > memoryMb * 2 ** 20) return
    if (!claim(join(directory, 'claims', String(index)), owner)) continue
    taken++
    await runFile(...named[index])
  }
}

function claim(path, owner) {
  try {
    writeFileSync(path, owner, { flag: 'wx' })
    return true
  } catch (error) {
    if (error.code === 'EEXIST') return false
    throw error
  }
}

/** Runs one file in its suite; resolves once the suite's tests and hooks have run. */
function runFile(name, url) {
  return new Promise((resolve) =>
    describe(name, async () => {
      const restoreChecked = environmentCheck(name)
      try {
        await import(url)
      } finally {
        after(() => {
          try {
            restoreChecked()
          } finally {
            resolve()
          }
        })
      }
    }),
  )
}

/** Gives the check: it puts back what the file changed in the environment, then fails naming it. */
function environmentCheck(name) {
  const environment = process.env
  const before = { ...environment }
  return () => {
    const replaced = process.env !== environment
    process.env = environment
    const names = new Set([...Object.keys(before), ...Object.keys(environment)])
    const changed = [...names].filter((variable) => before[variable] !== environment[variable]).sort()
    for (const variable of changed) {
      if (before[variable] === undefined) delete environment[variable]
      else environment[variable] = before[variable]
    }
    if (!replaced && changed.length === 0) return
    const what = [...(replaced ? ['replaced process.env'] : []), ...changed]
    throw new Error(
      `${name} left the environment changed (${what.join(', ')}): the files after it in its process would ` +
        'run under it. Restore each variable, deleting one that was unset, and never replace process.env',
    )
  }
}
