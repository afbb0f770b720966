/**
 * Sets environment variables for a test and gives back what puts them as they were: a variable that was
 * unset is deleted again (assigning `undefined` would set it to the text "undefined"), and process.env
 * stays the object Node reads (replacing it would leave child processes and os.tmpdir() apart).
 */
export function setEnvironment(settings: Record<string, string>): () => void {
  const saved = Object.keys(settings).map((name) => [name, process.env[name]] as const)
  Object.assign(process.env, settings)
  return () => {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name]
      else process.env[name] = value
    }
  }
}
