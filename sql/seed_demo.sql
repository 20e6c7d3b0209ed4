-- seed_demo.sql -- a small, realistic demo set of shifts (vagas) in São
-- Paulo for the local default and the tests. Names and contacts are
-- fictitious. Dates are relative to the day it is loaded. Idempotent.
-- SPDX-License-Identifier: MIT
INSERT INTO vagas (id, hospital, especialidade, regiao, turno, data,
    valor_bruto, responsavel_nome, responsavel_contato, status)
VALUES
 (1, 'Hospital Santa Lúcia', 'Clínica Médica', 'São Paulo - Zona Sul',
  'noturno', current_date + 3, 1800.00, 'Mariana Alves',
  '+55 11 90000-0101', 'aberta'),
 (2, 'Hospital Santa Lúcia', 'Pediatria', 'São Paulo - Zona Sul',
  'diurno', current_date + 4, 1650.00, 'Mariana Alves',
  '+55 11 90000-0101', 'aberta'),
 (3, 'Hospital Municipal do Tatuapé', 'Clínica Médica',
  'São Paulo - Zona Leste', '12h', current_date + 2, 1500.00,
  'Ricardo Nogueira', '+55 11 90000-0202', 'aberta'),
 (4, 'Pronto-Socorro Vila Mariana', 'Emergência',
  'São Paulo - Zona Sul', '12h', current_date + 5, 2100.00,
  'Fernanda Costa', '+55 11 90000-0303', 'aberta'),
 (5, 'Hospital São Camilo Pompeia', 'Ortopedia',
  'São Paulo - Zona Oeste', 'diurno', current_date + 6, 1900.00,
  'Paulo Henrique Lima', 'paulo.lima@example.com', 'aberta'),
 (6, 'Hospital Geral de Guarulhos', 'Clínica Médica', 'Guarulhos',
  'noturno', current_date + 7, 1700.00, 'Juliana Ribeiro',
  '+55 11 90000-0404', 'aberta'),
 (7, 'Hospital Estadual de Santo André', 'Pediatria',
  'ABC - Santo André', '12h', current_date + 3, 1600.00,
  'Carlos Eduardo Souza', '+55 11 90000-0505', 'aberta'),
 (8, 'Maternidade Zona Norte', 'Ginecologia e Obstetrícia',
  'São Paulo - Zona Norte', 'noturno', current_date + 8, 2000.00,
  'Beatriz Martins', '+55 11 90000-0606', 'aberta'),
 (9, 'UPA Itaquera', 'Emergência', 'São Paulo - Zona Leste', 'noturno',
  current_date + 1, 1750.00, 'Ricardo Nogueira', '+55 11 90000-0202',
  'aberta'),
 (10, 'Hospital do Coração Paulista', 'Cardiologia', 'São Paulo - Centro',
  'diurno', current_date + 10, 2300.00, 'Ana Paula Ferreira',
  'ana.ferreira@example.com', 'aberta'),
 (11, 'Hospital Municipal do Tatuapé', 'Pediatria',
  'São Paulo - Zona Leste', 'diurno', current_date + 2, 1550.00,
  'Ricardo Nogueira', '+55 11 90000-0202', 'fechada'),
 (12, 'Pronto-Socorro Vila Mariana', 'Clínica Médica',
  'São Paulo - Zona Sul', 'noturno', current_date + 4, 1800.00,
  'Fernanda Costa', '+55 11 90000-0303', 'fechada'),
 (13, 'Hospital Regional de Osasco', 'Anestesiologia', 'Osasco', '24h',
  current_date + 9, NULL, 'Rodrigo Batista', '+55 11 90000-0707',
  'aberta')
ON CONFLICT (id) DO NOTHING;
SELECT setval('vagas_id_seq', greatest((SELECT max(id) FROM vagas), 1));
