// TypeBox building blocks shared by the domain's input rules (applications, users).
import Type from 'typebox';

export const Text = (max: number) => Type.String({ minLength: 1, maxLength: max });
export const Nullable = <T extends ReturnType<typeof Type.String>>(s: T) => Type.Union([s, Type.Null()]);
