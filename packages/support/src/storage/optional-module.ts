/**
 * Loads a database driver the package lists as an optional peer dependency, so a partner installs
 * only the driver its outbox uses; a missing one is refused with the command that installs it.
 */
export async function importOptional<Module>(name: string, load: () => Promise<Module>): Promise<Module> {
  try {
    return await load()
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND' && String(error).includes(name))
      throw new Error(`${name} is not installed: run \`npm install ${name}\` to use this database`)
    throw error
  }
}
