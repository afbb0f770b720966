/** Where the JSON log lines go (stderr unless the embedding process gives another destination). */
export interface LogDestination {
  write(line: string): void
}
