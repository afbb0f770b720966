/**
 * What a process run-tests gives several files runs: each file imported in a suite named by its path, one
 * after another, so that a file's top-level hooks apply to its own tests alone; and, after the file's own
 * hooks, a check that it left process.env as it found it, since the files after it run under what it left.
 */
import { after, describe } from 'node:test'

export async function runFiles(named) {
  for (const [name, url] of named) {
    await new Promise((resolve) =>
      describe(name, async () => {
        const restoreChecked = environmentCheck(name)
        try {
          await import(url)
        } finally {
          after(restoreChecked)
          resolve()
        }
      }),
    )
  }
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
