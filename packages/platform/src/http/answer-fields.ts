import Type from 'typebox'

/** Fields the admin API's answers share, as their schemas describe them. */
export const Time = (description: string) =>
  Type.String({ description: `${description}; ISO-8601 UTC with milliseconds (…Z)` })
export const NullableTime = (description: string) => Type.Union([Time(description), Type.Null()])
export const Id = (description: string) => Type.Integer({ minimum: 1, description })

/** True when A and B are the same type. */
export type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
/** Compiles only when T is true: `Holds<Same<Static<typeof Schema>, Type>>`. */
export type Holds<T extends true> = T
